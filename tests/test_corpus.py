"""Tricky correct programs stay silent; variant positives are found exactly."""
from __future__ import annotations

import pytest

from conftest import CORPUS, cli_findings, expected, strip_col
from torchlint.rules import ALL_RULES

NEGATIVES = sorted((CORPUS / "negatives").glob("*.py"))
POSITIVES = sorted((CORPUS / "positives").glob("*.py"))


OPT_IN = ",".join(rule.code for rule in ALL_RULES if not rule.default)


@pytest.fixture(scope="module")
def found():
    # Named one by one: pyproject.toml excludes tests/corpus from directory walks.
    # Correct code must stay silent for the opt-in rules too.
    return {**cli_findings("--extend-select", OPT_IN, *NEGATIVES), **cli_findings(*POSITIVES)}


def test_corpus_is_not_empty():
    assert len(NEGATIVES) >= 30 and len(POSITIVES) >= 10


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.stem)
def test_correct_code_is_silent(path, found):
    assert expected(path) == set(), "negatives carry no expect markers"
    assert found.get(str(path), set()) == set()


@pytest.mark.parametrize("path", POSITIVES, ids=lambda p: p.stem)
def test_variant_is_flagged_exactly(path, found):
    assert expected(path), "a positive marks at least one finding"
    assert strip_col(found.get(str(path), set())) == expected(path)
