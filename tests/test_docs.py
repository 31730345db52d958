"""Rule docs are generated from the rule modules and must not go stale."""
from __future__ import annotations

import pytest

from conftest import ROOT
from torchlint.docs import pages, render
from torchlint.rules import ALL_RULES

SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead")


@pytest.mark.parametrize("name, text", sorted(pages().items()))
def test_committed_docs_match_the_rule_modules(name, text):
    path = ROOT / "docs" / "rules" / name
    assert path.is_file(), f"missing {path}; run python -m torchlint.docs"
    assert path.read_text(encoding="utf-8") == text, f"{path} is stale; run python -m torchlint.docs"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_each_rule_documents_itself(rule):
    page = render(rule)
    for section in SECTIONS:
        assert section in page, f"{rule.code} lacks {section}"
    assert rule.message and ";" in rule.message, "a message says what is wrong; and what to do"
    assert rule.name == rule.name.lower() and " " not in rule.name


def test_rule_modules_are_named_for_their_code():
    import importlib
    import pkgutil

    import torchlint.rules as package

    modules = [m.name for m in pkgutil.iter_modules(package.__path__)]
    for rule in ALL_RULES:
        [module] = [m for m in modules if m.startswith(rule.code.lower() + "_")]
        assert getattr(importlib.import_module(f"torchlint.rules.{module}"), rule.__name__) is rule


def test_readme_lists_every_rule():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert rule.code in readme and rule.name in readme
