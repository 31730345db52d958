"""Every rule's inline examples (``Rule.invalid`` / ``Rule.valid``) hold.

Each snippet is linted with every rule enabled, default and opt-in, through
the entry the CLI uses for a buffer on stdin. An invalid snippet must give
exactly the findings of its rule marked ``# expect: TLxxx``; a valid one none
of its rule. Other rules may speak on a snippet: each rule's examples test
that rule only. Select one rule's examples with ``pytest -k TL301``.

A snippet whose first line is ``# target-torch-version: X.Y`` is linted for
that target torch version (the others for the newest known), as a project
declaring it would be.
"""
from __future__ import annotations

import re

import pytest

from conftest import expected
from torchlint.rules import ALL_RULES
from torchlint.runner import lint_data
from torchlint.torch_version import parse_version
from torchlint.request import LintRequest

MIN_EXAMPLES = 2
_TARGET = re.compile(r"# target-torch-version: (\S+)\n")
ALL_CODES = tuple(rule.code for rule in ALL_RULES)


def _examples(kind: str) -> list:
    return [
        pytest.param(rule.code, source, id=f"{rule.code}-{kind}-{index}")
        for rule in ALL_RULES
        for index, source in enumerate(getattr(rule, kind))
    ]


def _lint(source: str, tmp_path) -> tuple:
    """({(line, code)} found with every rule on, {(line, code)} marked in the source).

    The snippet is written out so that conftest's marker reader reads it as it
    reads fixtures and the corpus; the file name is neutral (not ``test_*``,
    which rules treat as unit tests)."""
    compile(source, "example.py", "exec")  # a snippet that does not parse proves nothing
    path = tmp_path / "example.py"
    path.write_text(source, encoding="utf-8")
    target = _TARGET.match(source)
    result = lint_data(str(path), source, LintRequest.of(ALL_CODES, parse_version(target.group(1)) if target else None))
    assert not result.errors, [error.message for error in result.errors]
    return {(d.line, d.code) for d in result.diagnostics}, expected(path)


def _of(code: str, pairs: set) -> set:
    return {(line, found) for line, found in pairs if found == code}


def test_every_rule_has_examples_of_both_kinds():
    thin = [
        f"{rule.code}: {len(rule.invalid)} invalid, {len(rule.valid)} valid"
        for rule in ALL_RULES
        if len(rule.invalid) < MIN_EXAMPLES or len(rule.valid) < MIN_EXAMPLES
    ]
    assert not thin, f"each rule needs {MIN_EXAMPLES}+ invalid and valid examples: {thin}"


def test_examples_are_tuples_of_source():
    for rule in ALL_RULES:
        for kind in ("invalid", "valid"):
            examples = getattr(rule, kind)
            assert isinstance(examples, tuple), f"{rule.code}.{kind} must be a tuple"
            assert all(isinstance(source, str) for source in examples), f"{rule.code}.{kind}"


@pytest.mark.parametrize("code, source", _examples("invalid"))
def test_invalid_example_gives_exactly_its_marked_findings(code, source, tmp_path):
    found, marked = _lint(source, tmp_path)
    assert _of(code, marked), f"an invalid {code} example marks at least one {code} finding"
    assert marked == _of(code, marked), f"an invalid {code} example marks only {code}: {marked}"
    assert _of(code, found) == marked


@pytest.mark.parametrize("code, source", _examples("valid"))
def test_valid_example_is_silent(code, source, tmp_path):
    found, marked = _lint(source, tmp_path)
    assert not marked, f"a valid {code} example carries no expect markers"
    assert _of(code, found) == set()
