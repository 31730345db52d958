"""Tricky correct programs stay silent; variant positives are found exactly.

Every negative names, on its first line (``# guards: TL301 TL302``), the rules
a naive implementation would wrongly fire on it; a positive's rules are its
``# expect:`` markers. Test ids carry those codes, so ``pytest -k TL301``
selects one rule's negatives and positives (see tests/corpus/README.md).
"""
from __future__ import annotations

import re

import pytest

from conftest import CORPUS, cli_findings, expected, strip_col
from torchlint.rules import ALL_RULES, RULES_BY_CODE

NEGATIVES = sorted((CORPUS / "negatives").glob("*.py"))
POSITIVES = sorted((CORPUS / "positives").glob("*.py"))

_GUARDS = re.compile(r"#\s*guards:(?P<codes>(?:\s+TL\d+)+)\s*$")


OPT_IN = ",".join(rule.code for rule in ALL_RULES if not rule.default)


def guards(path) -> list:
    """The codes a negative's first line names (``# guards: TL301 TL302``); [] without one."""
    with open(path, encoding="utf-8") as fh:
        match = _GUARDS.match(fh.readline())
    return match.group("codes").split() if match else []


def _negative_id(path) -> str:
    return "-".join([path.stem, *guards(path)])


def _positive_id(path) -> str:
    return "-".join([path.stem, *sorted({code for _, code in expected(path)})])


@pytest.fixture(scope="module")
def found():
    # Named one by one: pyproject.toml excludes tests/corpus from directory walks.
    # Correct code must stay silent for the opt-in rules too.
    return {**cli_findings("--extend-select", OPT_IN, *NEGATIVES), **cli_findings(*POSITIVES)}


def test_corpus_is_not_empty():
    assert len(NEGATIVES) >= 30 and len(POSITIVES) >= 10


@pytest.mark.parametrize("path", NEGATIVES, ids=lambda p: p.stem)
def test_negative_names_the_rules_it_guards(path):
    codes = guards(path)
    assert codes, f"{path.name}: the first line must be '# guards: TLxxx ...' (see tests/corpus/README.md)"
    unknown = [code for code in codes if code not in RULES_BY_CODE]
    assert not unknown, f"{path.name} guards codes no rule has: {unknown}"
    assert len(set(codes)) == len(codes), f"{path.name} names a code twice: {codes}"


def test_every_rule_has_tricky_negatives():
    """A rule's own ``valid`` examples are its first tricky negatives (a new rule needs no
    corpus file); the corpus adds the longer programs. Every rule has one or the other."""
    guarded = {code for path in NEGATIVES for code in guards(path)}
    inline = {rule.code for rule in RULES_BY_CODE.values() if len(rule.valid) >= 2}
    assert guarded | inline == set(RULES_BY_CODE)


@pytest.mark.parametrize("path", NEGATIVES, ids=_negative_id)
def test_correct_code_is_silent(path, found):
    assert expected(path) == set(), "negatives carry no expect markers"
    fired = found.get(str(path), set())
    # Both fail; the message tells a regression of a guarded rule from a new
    # trap the header does not name yet.
    guarded = {f for f in fired if f[2] in guards(path)}
    assert not guarded, f"a rule this negative guards fired: {sorted(guarded)}"
    assert fired == set(), f"a rule not named in '# guards:' fired: {sorted(fired)}"


@pytest.mark.parametrize("path", POSITIVES, ids=_positive_id)
def test_variant_is_flagged_exactly(path, found):
    assert expected(path), "a positive marks at least one finding"
    assert strip_col(found.get(str(path), set())) == expected(path)
