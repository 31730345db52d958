"""TL011: a project moving from TorchFix keeps its ``# noqa`` silences, rewritten to torchlint's codes."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT, run_cli
from torchlint.codes import STATUS_CODES, TORCHFIX_NOQA
from torchlint.engine import lint_source
from torchlint.noqa import with_codes_replaced
from torchlint.rules import RULES_BY_CODE
from torchlint.torchfix_codes import ANSWERS

SOURCE = """\
import torch


def resume(path, old):
    state = torch.load(path)  # noqa: TOR102
    legacy = torch.load(old)  # noqa: TOR102, E501  loaded from our own runs
    stem = torch.log(1 + state["x"])  # noqa:TOR106,TOR107
    return state, legacy, stem  # noqa: TOR203
"""
MIGRATED = """\
import torch


def resume(path, old):
    state = torch.load(path)  # noqa: TL507
    legacy = torch.load(old)  # noqa: TL507, E501  loaded from our own runs
    stem = torch.log(1 + state["x"])  # noqa:TL704
    return state, legacy, stem  # noqa: TOR203
"""


def test_every_answer_is_a_rule_and_the_docs_table_says_the_same():
    assert all(code in RULES_BY_CODE for answers in ANSWERS.values() for code in answers)
    table = (ROOT / "docs" / "torchfix.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| (TOR\d{3}) \| [^|]*(?:\\\|[^|]*)* \| ([^|]*) \|", table, re.M))
    assert set(rows) == set(ANSWERS)
    for code, cell in rows.items():
        assert tuple(dict.fromkeys(re.findall(r"TL\d{3}", cell))) == ANSWERS[code], code


def test_tl011_reports_each_answered_code_with_a_safe_fix():
    found = lint_source(SOURCE, "m.py", [], noqa_checks=frozenset({TORCHFIX_NOQA})).diagnostics
    assert [(d.line, d.code) for d in found] == [(5, "TL011"), (6, "TL011"), (7, "TL011"), (7, "TL011")]
    assert found[0].message.startswith("TorchFix code TOR102 in noqa: torchlint's TL507 finds the same")
    assert all(d.fix == "safe" for d in found)
    assert lint_source(SOURCE, "m.py", [], noqa_checks=frozenset()).diagnostics == []  # opt-in


def test_fix_rewrites_only_the_comments_and_twice_is_once(tmp_path):
    path = tmp_path / "resume.py"
    path.write_text(SOURCE, encoding="utf-8")
    done = run_cli("check", "--no-cache", "--select", "TL011", "--fix", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert path.read_text(encoding="utf-8") == MIGRATED
    again = run_cli("check", "--no-cache", "--select", "TL011", "--fix", str(path))
    assert again.returncode == 0 and path.read_text(encoding="utf-8") == MIGRATED
    # the migrated comments silence what TorchFix's did: TL507 on a project targeting torch 2.1
    assert run_cli("check", "--no-cache", "--target-torch-version", "2.1", str(path)).returncode == 0


@pytest.mark.parametrize("comment, replacements, expected", [
    ("# noqa: TOR102", {"TOR102": ("TL507",)}, "# noqa: TL507"),
    ("# noqa: TOR106, TOR107", {"TOR106": ("TL704",), "TOR107": ("TL704",)}, "# noqa: TL704"),
    ("# noqa: TL507, TOR102", {"TOR102": ("TL507",)}, "# noqa: TL507"),  # never twice
    ("# NOQA: E501,TOR401 why", {"TOR401": ("TL601",)}, "# NOQA: E501, TL601 why"),
    ("# a comment", {"TOR102": ("TL507",)}, None),
])
def test_with_codes_replaced(comment, replacements, expected):
    assert with_codes_replaced(comment, replacements) == expected


def test_the_code_is_explained():
    done = run_cli("rule", "TL011")
    assert done.returncode == 0 and STATUS_CODES[TORCHFIX_NOQA][0] in done.stdout
