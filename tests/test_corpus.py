"""Tricky correct programs stay silent; variant positives are found exactly."""
from __future__ import annotations

import pytest

from conftest import CORPUS, cli_findings, expected, strip_col

NEGATIVES = sorted((CORPUS / "negatives").glob("*.py"))
POSITIVES = sorted((CORPUS / "positives").glob("*.py"))


@pytest.fixture(scope="module")
def found():
    # Named one by one: pyproject.toml excludes tests/corpus from directory walks.
    return cli_findings(*NEGATIVES, *POSITIVES)


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
