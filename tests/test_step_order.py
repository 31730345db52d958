"""Optimizer steps in program order (model/steps.py) and learning-rate schedulers (model/schedules.py),
the facts TL203 and TL204 read, asked directly."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.model import FileModel
from torchlint.model.schedules import scheduler_of
from torchlint.model.steps import may_run_after, optimizers_stepped_by, updates_model
from torchlint.rules.tl204_scheduler_before_optimizer_step import SchedulerBeforeOptimizerStep


def build(source: str, target_torch=None) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(source)), "m.py", target_torch)


def call(model: FileModel, callee: str):
    return next(c for c in model.calls if c.callee == callee)


@pytest.mark.parametrize("construction, model, expected", [
    ("opt_d = torch.optim.Adam(netD.parameters())", "netD", True),
    ("opt_d = torch.optim.Adam(netD.parameters())", "netG", False),
    ("opt = torch.optim.SGD([{'params': model.head.parameters()}], lr=0.1)", "model", True),
    ("opt = torch.optim.SGD(model.parameters(), lr=0.1)", "model.backbone", True),
    ("opt = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.1)", "b", True),
    ("opt = torch.optim.Adam(params)", "model", False),  # built from a list we cannot read, no GAN names
])
def test_what_an_optimizer_updates_from_its_construction(construction, model, expected):
    source = f"import torch\n{construction}\n"
    optimizer = construction.split(" = ")[0]
    assert updates_model(build(source), optimizer, model) is expected


@pytest.mark.parametrize("optimizer, model, expected", [
    ("optimizerD", "netD", True), ("self.opt_d", "self.discriminator", True),
    ("optimizerD", "netG", False), ("optimizer", "model", False),
])
def test_what_an_optimizer_updates_from_gan_names(optimizer, model, expected):
    assert updates_model(build("import torch\n"), optimizer, model) is expected


def test_a_helper_steps_the_optimizers_it_reaches():
    model = build("""
        import torch
        def train(model, loader, optimizer):
            for x in loader:
                model(x).sum().backward()
                optimizer.step()
        def fit(model, loader, optimizer):
            train(model, loader, optimizer)
            evaluate(model)
    """)
    assert optimizers_stepped_by(model, call(model, "train")) == {"optimizer"}
    assert optimizers_stepped_by(model, call(model, "evaluate")) == frozenset()


@pytest.mark.parametrize("source, expected", [
    ("a()\nb()\n", True),
    ("if c:\n    a()\nelse:\n    b()\n", False),
    ("if c:\n    a()\nelif d:\n    b()\n", False),
    ("if c:\n    a()\n    continue\nb()\n", False),
    ("if c:\n    a()\n    if d:\n        continue\nb()\n", True),  # only sometimes leaves
    ("for i in r:\n    a()\n    break\nb()\n", True),  # the break ends the inner loop only
    ("if c:\n    a()\n    return\nb()\n", False),
])
def test_may_run_after(source, expected):
    body = textwrap.indent(source, "        ")
    model = build(f"def f(r, c, d):\n    for _ in r:\n{body}")
    scope = model.functions["f"][0]
    assert may_run_after(scope, call(model, "a").node, call(model, "b").node) is expected


@pytest.mark.parametrize("source, kind, optimizer", [
    ("from torch.optim import lr_scheduler\ns = lr_scheduler.StepLR(opt, 10)\n", "StepLR", None),
    ("import torch\nopt = torch.optim.SGD(m.parameters(), lr=1)\ns = torch.optim.lr_scheduler.OneCycleLR(opt, 1)\n",
     "OneCycleLR", "opt"),
    ("from transformers import get_linear_schedule_with_warmup as g\n"
     "s = get_linear_schedule_with_warmup(optimizer, 10, 100)\n", "get_linear_schedule_with_warmup", "optimizer"),
    ("from torch.optim import lr_scheduler\nclass W(lr_scheduler._LRScheduler):\n    pass\ns = W(opt)\n", "W", None),
    ("import torch\ns = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\n", "ReduceLROnPlateau", None),
])
def test_schedulers_known_by_construction(source, kind, optimizer):
    found = scheduler_of(build(source), "s")
    assert found is not None and found.kind == kind
    if optimizer is not None:
        assert found.optimizer == optimizer


def test_scheduler_names_are_the_fallback():
    model = build("import torch\nnoise_scheduler = DDPMScheduler()\nscheduler = MyWarmup(opt)\n")
    assert scheduler_of(model, "noise_scheduler") is None
    assert scheduler_of(model, "scheduler") is None  # built here by something else
    assert scheduler_of(model, "self.lr_scheduler") is not None
    assert scheduler_of(model, "warmup") is None


def test_a_metric_scheduler_anywhere_under_the_name_wins():
    model = build("""
        import torch
        def a(opt):
            scheduler = torch.optim.lr_scheduler.StepLR(opt, 1)
        def b(opt):
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    """)
    assert scheduler_of(model, "scheduler").takes_metric


SCHEDULER_FIRST = """
import torch

def train(model, loader, optimizer, scheduler):
    for epoch in range(10):
        scheduler.step()
        for x in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
"""


@pytest.mark.parametrize("target, found", [(None, 1), ((1, 1), 1), ((1, 0), 0), ((0, 4), 0)])
def test_tl204_follows_the_target_torch_version(target, found):
    model = build(SCHEDULER_FIRST, target)
    assert len(list(SchedulerBeforeOptimizerStep().check(model))) == found


def test_the_optimizer_built_in_the_scope_decides():
    model = build("""
        import torch
        def a(model, head):
            optimizer = torch.optim.SGD(model.parameters(), lr=1)
        def b(model, head):
            optimizer = torch.optim.SGD(head.parameters(), lr=1)
    """)
    b = model.functions["b"][0]
    assert updates_model(model, "optimizer", "model") is True  # the file as a whole
    assert updates_model(model, "optimizer", "model", b) is False
    assert updates_model(model, "optimizer", "head", b) is True
