"""TL205 and TL206: where their fixes are offered, and the model facts they read (model/grad_flow.py)."""
from __future__ import annotations

import textwrap

import libcst as cst

from torchlint.engine import lint_source
from torchlint.fixer import allowed_fixes, fix_text
from torchlint.model import FileModel
from torchlint.model.grad_flow import exclusive, iteration_events, iteration_of
from torchlint.rules import ALL_RULES
from torchlint.request import LintRequest


def _codes(source: str) -> list:
    result = lint_source(textwrap.dedent(source), "train.py", ALL_RULES)
    assert not result.errors
    return [(d.line, d.code) for d in result.diagnostics]


def _fixed(source: str) -> str:
    """The source after every fix that applies (unchanged when none does)."""
    source = textwrap.dedent(source)
    return fix_text(source, "train.py", LintRequest.for_rules(ALL_RULES), allowed_fixes(True)).text or source


def _model(source: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(source)), "train.py")


ONE_BRANCH_SCALED = """\
import torch

def train(model, loader, optimizer, criterion, scaler, use_amp):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        if use_amp:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if use_amp:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
"""


def test_tl206_clip_after_a_scaled_backward_on_one_branch_is_reported_without_a_fix():
    assert _codes(ONE_BRANCH_SCALED) == [(11, "TL206")]
    assert "unscale_" not in _fixed(ONE_BRANCH_SCALED)  # it would run without a scaler on the other branch


def test_two_ifs_on_the_same_condition_are_alternatives():
    model = _model(ONE_BRANCH_SCALED)
    scaled, plain = [c for c in model.calls if c.method == "backward"]
    scaler_step, optimizer_step = [c for c in model.calls if c.method == "step"]
    assert exclusive(model, scaled, optimizer_step) and exclusive(model, plain, scaler_step)
    assert not exclusive(model, scaled, scaler_step) and not exclusive(model, plain, optimizer_step)
    events = iteration_events(model, iteration_of(scaled))
    assert [e.kind for e in events] == ["clear", "backward", "backward", "clip", "step", "step"]
    assert [e.scaler for e in events if e.kind == "backward"] == ["scaler", None]


def test_tl206_update_fix_stays_out_when_the_scope_updates_elsewhere():
    source = """\
import torch

def train(model, epochs, loader, optimizer, criterion):
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            scaler.scale(criterion(model(x), y)).backward()
            scaler.step(optimizer)
        scaler.update()
"""
    assert _codes(source) == [(9, "TL206")]
    assert _fixed(source).count("scaler.update()") == 1


def test_tl206_no_unscale_fix_when_the_scaler_steps_less_often_than_the_clip():
    source = """\
import torch

def train(model, loader, optimizer, criterion, accum=4):
    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        scaler.scale(criterion(model(x), y) / accum).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""
    assert _codes(source) == [(7, "TL206")]
    assert "unscale_" not in _fixed(source)


def test_tl205_moves_the_clip_before_the_step_and_the_finding_goes():
    source = """\
import torch

def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""
    fixed = _fixed(source)
    assert "clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()\n" in fixed
    assert _codes(fixed) == []


def test_tl205_no_move_across_a_rebinding_of_what_the_clip_reads():
    source = """\
import torch

def train(model, loader, optimizer, criterion, make_params):
    for x, y in loader:
        optimizer.zero_grad()
        params = make_params(model)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        loss = criterion(model(x), y)
        params = make_params(model)
        loss.backward()
        optimizer.step()
"""
    assert _codes(source) == [(7, "TL205")]
    assert _fixed(source) == textwrap.dedent(source)
