"""Fixes that keep programs correct, and findings that agree across spellings.

Regressions of issue 16 (items 5-7): each case here was reported or fixed
wrongly before.
"""
from __future__ import annotations

import textwrap

import pytest

from torchlint.engine import lint_source
from torchlint.fixer import allowed_fixes, fix_text
from torchlint.rules import ALL_RULES, RULES_BY_CODE
from torchlint.request import LintRequest


def _codes(source: str) -> list:
    result = lint_source(textwrap.dedent(source), "train.py", ALL_RULES)
    assert not result.errors
    return [(d.line, d.code) for d in result.diagnostics]


def _fixed(source: str) -> str:
    outcome = fix_text(textwrap.dedent(source), "train.py", LintRequest.for_rules(ALL_RULES), allowed_fixes(True))
    assert not outcome.rejected
    return outcome.text


# -- gradient accumulation, in every spelling (item 5) ----------------------------

ACCUMULATED_THEN_BACKPROPAGATED = {
    "augmented": "total += criterion(model(x), y)",
    "rebinding": "total = total + criterion(model(x), y)",
    "rebinding, reversed": "total = criterion(model(x), y) + total",
}


@pytest.mark.parametrize("spelling", ACCUMULATED_THEN_BACKPROPAGATED.values(), ids=list(ACCUMULATED_THEN_BACKPROPAGATED))
@pytest.mark.parametrize("backward", ["total.backward()", "(total / len(loader)).backward()",
                                      "loss = total / 4\n    loss.backward()"])
def test_accumulation_backpropagated_after_the_loop_is_silent(spelling, backward):
    source = f"""\
import torch

def train(model, loader, optimizer, criterion):
    total = 0
    for x, y in loader:
        {spelling}
    {backward}
    optimizer.step()
"""
    assert _codes(source) == []


@pytest.mark.parametrize("spelling", ACCUMULATED_THEN_BACKPROPAGATED.values(), ids=list(ACCUMULATED_THEN_BACKPROPAGATED))
def test_accumulation_backpropagated_every_few_steps_is_silent(spelling):
    source = f"""\
import torch

def train(model, loader, optimizer, criterion):
    total = 0
    for i, (x, y) in enumerate(loader):
        {spelling}
        if (i + 1) % 4 == 0:
            total.backward()
            optimizer.step()
            optimizer.zero_grad()
            total = 0
"""
    assert _codes(source) == []


@pytest.mark.parametrize("spelling", ["running += loss", "running = running + loss", "running = loss + running"])
def test_accumulation_for_logging_is_reported_in_every_spelling(spelling):
    source = f"""\
import torch

def train(model, loader, optimizer, criterion):
    running = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        {spelling}
    print(running)
"""
    assert _codes(source) == [(10, "TL301")]
    assert f"{spelling.replace('loss', 'loss.detach()')}" in _fixed(source)


# -- TL201's fix keeps accumulated gradients (item 6) --------------------------------

CONDITIONAL_STEP = """\
import torch

def train(model, loader, optimizer, criterion, accum=4):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
"""


def test_tl201_fix_clears_right_after_a_conditional_step():
    assert _codes(CONDITIONAL_STEP) == [(8, "TL201")]
    fixed = _fixed(CONDITIONAL_STEP)
    assert fixed.endswith("            optimizer.step()\n            optimizer.zero_grad()\n")
    assert fixed.count("zero_grad") == 1
    assert _codes(fixed) == []


def test_tl201_fix_still_clears_first_when_every_iteration_steps():
    source = """\
import torch

def train(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
"""
    assert "    for x, y in loader:\n        optimizer.zero_grad()\n" in _fixed(source)


# -- TL101's fix: shadowed torch, async loops, TL105 under the new no_grad (item 7) ---

def test_tl101_offers_no_fix_where_a_parameter_named_torch_hides_the_module():
    source = """\
import torch

def evaluate(model, loader, torch):
    model.eval()
    for x, y in loader:
        print(model(x))
"""
    assert _codes(source) == [(6, "TL101")]
    diagnostics = lint_source(source, "e.py", [RULES_BY_CODE["TL101"]]).diagnostics
    assert diagnostics[0].fix is None


def test_tl101_uses_an_alias_that_is_not_shadowed():
    source = """\
import torch as T

def evaluate(model, loader, torch):
    model.eval()
    for x, y in loader:
        print(model(x))
"""
    assert "with T.no_grad():" in _fixed(source)


ASYNC_EVALUATION = {
    "async for": """\
import torch

async def evaluate(model, stream):
    model.eval()
    async for x in stream:
        print(model(x))
""",
    "async with": """\
import torch

async def evaluate(model, loader, lock):
    model.eval()
    for x, y in loader:
        async with lock:
            print(model(x))
""",
}


@pytest.mark.parametrize("source", ASYNC_EVALUATION.values(), ids=list(ASYNC_EVALUATION))
def test_tl101_does_not_wrap_async_code(source):
    diagnostics = lint_source(source, "e.py", [RULES_BY_CODE["TL101"]]).diagnostics
    assert [d.code for d in diagnostics] == ["TL101"]
    assert diagnostics[0].fix is None


def test_a_tl101_wrap_over_a_volatile_variable_removes_it_too():
    source = """\
import torch
from torch.autograd import Variable

def evaluate(model, loader):
    model.eval()
    for x, y in loader:
        print(model(Variable(x, volatile=True)))
"""
    fixed = _fixed(source)
    assert "volatile" not in fixed and "with torch.no_grad():" in fixed
    assert _codes(fixed) == []


def test_a_tl101_wrap_drops_computed_volatile_flags_too():
    source = """\
import torch
from torch.autograd import Variable

def evaluate(model, loader, train=False):
    model.eval()
    for x, y in loader:
        x = Variable(x, volatile=not train)
        print(model(x))
"""
    assert sorted(c for _, c in _codes(source)) == ["TL101", "TL105"]
    fixed = _fixed(source)
    assert "volatile" not in fixed and "x = x" not in fixed
    assert _codes(fixed) == []


# -- one finding's fix, as an editor asks for it ------------------------------------

def test_a_fix_at_one_position_fixes_that_finding_only():
    source = """\
import torch

def train(model, loader, optimizer, criterion):
    first, second = [], []
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        first.append(loss)
        second.append(loss)
"""
    found = [(d.line, d.col) for d in lint_source(source, "t.py", ALL_RULES).diagnostics if d.code == "TL301"]
    assert found == [(10, 9), (11, 9)]
    fixed = fix_text(source, "t.py", LintRequest.for_rules(ALL_RULES), allowed_fixes(True), only=["TL301"], at=(11, 9)).text
    assert "second.append(loss.detach())" in fixed and "first.append(loss)\n" in fixed
    assert fix_text(source, "t.py", LintRequest.for_rules(ALL_RULES), allowed_fixes(True), at=(3, 1)).text is None
