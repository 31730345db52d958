"""Fixes proven at run time (issue 16, item 8).

For every rule with a fix: ``--fix --unsafe-fixes`` is applied to its
fixture's ``bad.py``, and the rule's own probe runs the fixed program against
``good.py``. The verdict must be the one ``good.py`` gets against itself: the
measured hazard is gone and the program still runs to the end (a probe that
raises fails the test). On CPU, in the suite.
"""
from __future__ import annotations

import shutil

import pytest

from conftest import load_module
from test_evidence import HARNESS, ITERATIONS
from torchlint.cli import main
from torchlint.rules import ALL_RULES

FIXED = sorted(rule.code for rule in ALL_RULES if rule.fix_safety != "none" and rule.code in HARNESS.PROBES)


def _verdict_word(verdict: str) -> str:
    return "confirmed" if verdict.startswith("confirmed") else "not confirmed"


def test_every_rule_with_a_fix_is_proven():
    with_fix = {rule.code for rule in ALL_RULES if rule.fix_safety != "none"}
    assert with_fix and with_fix <= set(FIXED) | {"TL106"}, with_fix - set(FIXED)


@pytest.mark.parametrize("code", FIXED)
def test_the_fixed_program_measures_like_good(code, tmp_path, capsys):
    folder = HARNESS.fixture_dirs()[code]
    fixed_path = tmp_path / "bad.py"
    shutil.copy(folder / "bad.py", fixed_path)
    for config in ("torchlint.toml", ".torchlint.toml"):  # a fixture's project settings (its target torch)
        if (folder / config).is_file():
            shutil.copy(folder / config, tmp_path / config)
    main(["check", "--fix", "--unsafe-fixes", "--no-cache", "--extend-select", code, str(fixed_path)])
    capsys.readouterr()
    assert fixed_path.read_text() != (folder / "bad.py").read_text(), f"{code}: no fix was applied"

    probe, _, advisory = HARNESS.PROBES[code]
    good = HARNESS.load(code, "good")
    fixed = load_module(fixed_path, f"_tl_fixed_{code}")
    expected, _, baseline = probe(HARNESS.load(code, "good"), good, "cpu", ITERATIONS, 0)
    measured, _, verdict = probe(fixed, good, "cpu", ITERATIONS, 0)
    assert _verdict_word(verdict) == _verdict_word(baseline) == "not confirmed", (verdict, baseline)
    if advisory:  # its verdict cannot tell bad from good on CPU: the counts it measured can
        assert measured["bad"] == expected["bad"], (measured["bad"], expected["bad"])


def test_the_probes_tell_the_unfixed_program_apart():
    """What makes the test above mean something: on the unfixed bad.py each probe finds the hazard."""
    for code in FIXED:
        probe, _, advisory = HARNESS.PROBES[code]
        good = HARNESS.load(code, "good")
        measured, _, verdict = probe(HARNESS.load(code, "bad"), good, "cpu", ITERATIONS, 0)
        if advisory:
            expected, _, _ = probe(HARNESS.load(code, "good"), good, "cpu", ITERATIONS, 0)
            assert measured["bad"] != expected["bad"], code
        else:
            assert _verdict_word(verdict) == "confirmed", (code, verdict)
