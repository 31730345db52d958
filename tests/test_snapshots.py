"""Golden output per rule: every finding (code, range, message, fix) and every fix diff, reviewed.

For each rule, its fixture's ``bad.py`` and each of its inline ``invalid`` examples are linted with
that rule alone, and its fixes (safe and unsafe) are applied through the fix loop. The result is
compared with ``tests/__snapshots__/test_snapshots.ambr`` (syrupy): a changed message, column,
range or fix shows up as a snapshot diff, as ruff's snapshot tests show it. After a deliberate
change, read the diff, then accept it with ``python -m pytest tests/test_snapshots.py
--snapshot-update``.
"""
from __future__ import annotations

import difflib
import re

import pytest

from conftest import FIXTURES, ROOT
from torchlint.config import Settings
from torchlint.diagnostic import allowed_fixes
from torchlint.fixer import fix_text
from torchlint.rules import ALL_RULES
from torchlint.runner import lint_data
from torchlint.torch_version import parse_version
from torchlint.request import LintRequest

_TARGET = re.compile(r"# target-torch-version: (\S+)\n")


def _cases(rule, tmp_path):
    """(label, path linted, text, target torch) for the rule's fixture bad.py and its invalid examples."""
    [folder] = [p for p in FIXTURES.iterdir() if p.is_dir() and p.name.startswith(rule.code + "_")]
    bad = folder / "bad.py"
    yield (bad.relative_to(ROOT).as_posix(), bad, bad.read_text(encoding="utf-8"),
           Settings().resolve(str(bad)).target_torch)
    for index, source in enumerate(rule.invalid):
        path = tmp_path / "example.py"  # a neutral name: rules treat test_*.py as unit tests
        path.write_text(source, encoding="utf-8")
        target = _TARGET.match(source)
        yield f"invalid[{index}]", path, source, parse_version(target.group(1)) if target else None


def _findings(rule, path, text, target) -> list:
    result = lint_data(str(path), text, LintRequest.of({rule.code}, target))
    assert not result.errors, [error.message for error in result.errors]
    lines = []
    for d in sorted(result.diagnostics, key=lambda d: (d.line, d.col)):
        fix = f"  [{d.fix} fix: {d.fix_description}]" if d.fix else ""
        lines.append(f"{d.line}:{d.col}-{d.end_line}:{d.end_col} {d.code} {d.message}{fix}")
    return lines


def _fix_diff(rule, path, text, target) -> list:
    outcome = fix_text(text, str(path), LintRequest.for_rules([rule], target), allowed_fixes(True), only={rule.code})
    lines = [f"refused: line {line}: {reason}" for _, line, reason in outcome.rejected]
    if outcome.text is None:
        return lines + ["(no fix applied)"]
    diff = difflib.unified_diff(text.splitlines(), outcome.text.splitlines(), "before", "after", n=1, lineterm="")
    return lines + list(diff)[2:]  # the ---/+++ header says nothing a reader needs


def rule_output(rule, tmp_path) -> str:
    blocks = []
    for label, path, text, target in _cases(rule, tmp_path):
        blocks.append("\n".join([f"== {label}", *_findings(rule, path, text, target), "-- fix",
                                 *_fix_diff(rule, path, text, target)]))
    return "\n\n".join(blocks) + "\n"


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_findings_and_fixes_match_the_reviewed_snapshot(rule, tmp_path, snapshot):
    assert rule_output(rule, tmp_path) == snapshot


def test_a_changed_message_shows_up_as_a_snapshot_difference(tmp_path, monkeypatch):
    rule = next(rule for rule in ALL_RULES if rule.code == "TL301")
    before = rule_output(rule, tmp_path)
    monkeypatch.setattr(rule, "message", rule.message + " (changed)")
    after = rule_output(rule, tmp_path)
    assert before != after and "(changed)" in after and "(changed)" not in before
