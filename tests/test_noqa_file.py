"""``# torchlint: noqa`` exempts a whole file; opt-in TL010 reports TL noqa codes that did nothing.

Both are applied in the engine, so the CLI, the language server and the flake8
plugin agree. Documented in README.md ("Suppressing findings") and by
``torchlint rule TL010``.
"""
from __future__ import annotations

import pytest

from conftest import run_cli, run_flake8
from test_config import BOTH, TWO_FAMILIES, check_json, write
from torchlint.cli import main
from torchlint.engine import lint_source
from torchlint.rules import ALL_RULES
from torchlint.runner import lint_data
from torchlint.request import LintRequest

ALL_CODES = {rule.code for rule in ALL_RULES}


def found(source: str, codes=ALL_CODES) -> set:
    return {(d.line, d.code) for d in lint_data("m.py", source, LintRequest.of(codes)).diagnostics}


def with_line(source: str, number: int, comment: str) -> str:
    """``source`` with ``comment`` appended to line ``number``."""
    lines = source.splitlines()
    lines[number - 1] += f"  {comment}"
    return "\n".join(lines) + "\n"


# -- the file-level exemption ---------------------------------------------------------

def test_the_findings_the_exemption_applies_to_are_there_without_it():
    assert found(TWO_FAMILIES) == BOTH


@pytest.mark.parametrize("directive", ["# torchlint: noqa", "#torchlint:noqa", "# TORCHLINT: NOQA"])
def test_a_bare_file_exemption_silences_every_finding(directive):
    assert found(f"{directive}\n{TWO_FAMILIES}") == set()
    assert found(f"{TWO_FAMILIES}    {directive}\n") == set()  # anywhere, on its own line


def test_a_file_exemption_with_codes_silences_those_codes_only():
    source = TWO_FAMILIES + "# torchlint: noqa: TL301,TL999\n"
    assert found(source) == {c for c in BOTH if c[1] == "TL101"}
    assert found(TWO_FAMILIES + "# torchlint: noqa: TL3\n") == {c for c in BOTH if c[1] == "TL101"}


@pytest.mark.parametrize("not_a_directive", [
    'NOTE = """\n# torchlint: noqa\n"""\n',  # text in a string
    "x = 1  # torchlint: noqa\n",  # after code: not on its own line
    "# torchlint: noqa for now\n",  # more words after it
])
def test_only_a_comment_alone_on_its_line_exempts_the_file(not_a_directive):
    assert found(TWO_FAMILIES + not_a_directive) == BOTH


def test_the_flake8_plugin_applies_the_file_exemption(tmp_path):
    write(tmp_path, "m.py", TWO_FAMILIES + "# torchlint: noqa: TL101\n")
    proc = run_flake8("--select=TL", "m.py", cwd=tmp_path)
    assert "TL301" in proc.stdout and "TL101" not in proc.stdout, proc.stdout + proc.stderr


def test_the_cli_applies_the_file_exemption(project, capsys):
    write(project, "m.py", "# torchlint: noqa: TL301\n" + TWO_FAMILIES)
    assert check_json("m.py", capsys=capsys) == (1, {"m.py": {(20, "TL101")}})


# -- TL010: unused noqa codes -------------------------------------------------------------

WITH_TL010 = ALL_CODES | {"TL010"}


def test_tl010_is_off_by_default():
    assert found(with_line(TWO_FAMILIES, 5, "# noqa: TL301,TL999")) == BOTH


def test_a_noqa_code_that_suppressed_a_finding_is_used():
    source = with_line(TWO_FAMILIES, 11, "# noqa: TL301")
    assert found(source, WITH_TL010) == {(19, "TL101")}


def test_unused_and_unknown_tl_codes_are_reported_other_tools_codes_are_not():
    source = with_line(TWO_FAMILIES, 11, "# noqa: TL301, E501, TL101, TL999, F401")
    result = lint_data("m.py", source, LintRequest.of(WITH_TL010)).diagnostics
    tl010 = sorted(d.message for d in result if d.code == "TL010")
    assert tl010 == ["unused noqa code TL101: suppressed nothing on this line",
                     "unused noqa code TL999: unknown code"]
    assert all(d.line == 11 for d in result if d.code == "TL010")


def test_a_bare_noqa_and_a_noqa_naming_tl010_are_not_judged():
    assert found(with_line(TWO_FAMILIES, 5, "# noqa"), WITH_TL010) == BOTH
    assert found(with_line(TWO_FAMILIES, 5, "# noqa: TL301,TL010"), WITH_TL010) == BOTH


def test_a_noqa_for_a_rule_not_enabled_suppressed_nothing():
    source = with_line(TWO_FAMILIES, 11, "# noqa: TL301")
    assert found(source, {"TL101", "TL010"}) == {(19, "TL101"), (11, "TL010")}
    assert found(source, {"TL010"}) == {(11, "TL010")}  # no rule to run at all


def test_noqa_text_inside_a_string_is_not_judged():
    assert found('X = "# noqa: TL999"\n', {"TL010"}) == set()


def test_tl010_is_selected_and_ignored_like_any_code(project, capsys):
    write(project, "m.py", with_line(TWO_FAMILIES, 5, "# noqa: TL302"))
    assert check_json("m.py", capsys=capsys)[1] == {"m.py": BOTH}
    assert check_json("--select", "TL", "m.py", capsys=capsys)[1] == {"m.py": BOTH}  # opt-in
    assert check_json("--extend-select", "TL010", "m.py", capsys=capsys)[1] == {"m.py": BOTH | {(5, "TL010")}}
    write(project, "torchlint.toml", 'extend-select = ["TL010"]\n')
    assert check_json("m.py", capsys=capsys)[1] == {"m.py": BOTH | {(5, "TL010")}}
    assert check_json("--ignore", "TL010", "m.py", capsys=capsys)[1] == {"m.py": BOTH}
    write(project, "torchlint.toml", 'extend-select = ["TL010"]\nper-file-ignores = { "m.py" = ["TL010"] }\n')
    assert check_json("m.py", capsys=capsys)[1] == {"m.py": BOTH}


def test_the_flake8_plugin_reports_tl010_when_selected(tmp_path):
    write(tmp_path, "m.py", with_line(TWO_FAMILIES, 5, "# noqa: TL302"))
    write(tmp_path, "torchlint.toml", 'extend-select = ["TL010"]\n')
    proc = run_flake8("--select=TL", "m.py", cwd=tmp_path)
    assert "m.py:5:" in proc.stdout and "TL010" in proc.stdout, proc.stdout + proc.stderr


def test_a_file_exemption_covering_tl010_silences_it():
    source = "# torchlint: noqa: TL010\n" + with_line(TWO_FAMILIES, 5, "# noqa: TL302")
    assert ("TL010" not in {c for _, c in found(source, WITH_TL010)})


def test_torchlint_rule_explains_tl010():
    proc = run_cli("rule", "TL010")
    assert proc.returncode == 0 and "unused-noqa" in proc.stdout and "Opt-in" in proc.stdout


def test_the_engine_reports_tl010_only_when_asked():
    source = with_line(TWO_FAMILIES, 5, "# noqa: TL302")
    assert {d.code for d in lint_source(source, "m.py", ALL_RULES).diagnostics} == {"TL101", "TL301"}
    asked = lint_source(source, "m.py", ALL_RULES, noqa_checks=frozenset({"TL010"})).diagnostics
    assert {d.code for d in asked} == {"TL101", "TL301", "TL010"}


# -- TL010's safe fix ------------------------------------------------------------------------

UNUSED = """\
import torch


def train(model, loader, optimizer, criterion):
    losses = []  # noqa: TL301, E501
    for x, y in loader:  # keep  # noqa: TL999
        optimizer.zero_grad()
        # noqa: TL302
        loss = criterion(model(x), y)
        loss.backward()  # noqa: TL302,TL999 why
        optimizer.step()
        losses.append(loss)  # noqa: TL301
    return losses
"""
UNUSED_FIXED = """\
import torch


def train(model, loader, optimizer, criterion):
    losses = []  # noqa: E501
    for x, y in loader:  # keep
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()  # why
        optimizer.step()
        losses.append(loss)  # noqa: TL301
    return losses
"""


def test_fix_removes_unused_codes_and_comments_left_empty(project, capsys):
    path = write(project, "m.py", UNUSED)
    assert main(["check", "--no-cache", "--fix", "--extend-select", "TL010", "m.py"]) == 0
    assert path.read_text() == UNUSED_FIXED  # the used TL301 and flake8's E501 stay
    assert "5 fixed, 0 remaining" in capsys.readouterr().out


def test_fix_leaves_noqa_comments_alone_unless_tl010_is_enabled(project, capsys):
    path = write(project, "m.py", UNUSED)
    main(["check", "--no-cache", "--fix", "m.py"])
    assert path.read_text() == UNUSED
    capsys.readouterr()


def test_tl010_findings_offer_a_safe_fix():
    result = lint_data("m.py", UNUSED, LintRequest.of(WITH_TL010)).diagnostics
    tl010 = [d for d in result if d.code == "TL010"]
    assert len(tl010) == 5 and all(d.fix is not None and d.fix.value == "safe" for d in tl010)
