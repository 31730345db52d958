"""Fixes of TL505 (``.data[0]`` -> ``.item()``) and TL506 (the spelling), and where each is safe."""
from __future__ import annotations

import textwrap

import libcst

from torchlint.fixer import allowed_fixes, fix_text
from torchlint.model import FileModel
from torchlint.rules import ALL_RULES, RULES_BY_CODE
from torchlint.rules.tl506_misspelled_grad_attribute import intended_attribute
from torchlint.request import LintRequest


def _fixed(source: str, unsafe: bool) -> str:
    outcome = fix_text(textwrap.dedent(source), "train.py", LintRequest.for_rules(ALL_RULES), allowed_fixes(unsafe))
    assert not outcome.rejected
    return outcome.text


def test_tl505_reads_the_number_with_item_whatever_the_way_to_index_0():
    source = """\
    import torch
    import torch.nn.functional as F


    def log(out, y):
        loss = F.mse_loss(out, y)
        return loss.data[0], float(loss.data.cpu().numpy()[0]), int((out > 0).sum().cpu().data[0])
    """
    assert "return loss.item(), float(loss.item()), int((out > 0).sum().item())" in _fixed(source, unsafe=False)


def test_tl505_is_silent_for_a_project_on_torch_older_than_0_4():
    module = libcst.parse_module("import torch\n\ndef f(out):\n    return out.sum().data[0]\n")
    rule = RULES_BY_CODE["TL505"]()
    assert [f.code for f in rule.check(FileModel(module, "a.py", (0, 4)))] == ["TL505"]
    assert not list(rule.check(FileModel(module, "a.py", (0, 3))))


def test_tl506_fix_is_safe_on_leaves_and_unsafe_on_computed_tensors():
    source = """\
    import torch


    def attack(model, x, layers):
        for p in layers.parameters():
            p.require_grad = False
        x_adv = x.detach().clone()
        x_adv.requires_grads = True
        hidden = model.features(x)
        hidden.requires_gradient = True
        hidden.retain_grad = True
        return model.head(hidden)
    """
    safe = _fixed(source, unsafe=False)
    assert "p.requires_grad = False" in safe and "x_adv.requires_grad = True" in safe
    assert "hidden.requires_gradient = True" in safe and "hidden.retain_grad = True" in safe
    unsafe = _fixed(source, unsafe=True)
    assert "hidden.requires_grad = True" in unsafe and "hidden.retain_grad()" in unsafe


def test_tl506_spellings():
    meant = {name: "requires_grad" for name in (
        "require_grad", "requires_grads", "require_grads", "requires_gradient", "requiresGrad",
        "requires_grad_", "Requires_Grad", "reqiures_grad", "requries_grad", "requires_gard", "required_grad")}
    meant.update(retain_grad="retain_grad", retain_grads="retain_grad")
    for name, intended in meant.items():
        assert intended_attribute(name) == intended, name
    for name in ("requires_grad", "retains_grad", "_requires_grad", "grads", "gradient", "requires_grad_mask",
                 "acquires_grad", "no_requires_grad", "grad_fn", "is_leaf", "weight"):
        assert intended_attribute(name) is None, name
