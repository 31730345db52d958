"""The flake8 surface: registration, options flake8 users rely on, and isolation of failures."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, cli_findings, flake8_findings, run_flake8

SOURCE = """\
import torch

def evaluate(model, loader):
    model.eval()
    outs = []
    for x in loader:
        outs.append(model(x).argmax(1)){noqa}
    return outs
"""


@pytest.fixture
def bad(tmp_path):
    def make(noqa=""):
        path = tmp_path / "evaluate.py"
        path.write_text(SOURCE.format(noqa=noqa))
        return path
    return make


def test_plugin_is_registered():
    proc = run_flake8("--version")
    assert "torchlint" in proc.stdout


def test_select_reports_code_line_and_column_like_the_cli(bad):
    path = bad()
    found = flake8_findings(path)
    assert found == {str(path): {(7, 21, "TL101")}}
    assert found == cli_findings(path)


def test_extend_select_and_default_selection(bad):
    path = bad()
    assert "TL101" in run_flake8("--extend-select=TL", path).stdout
    assert "TL101" in run_flake8(path).stdout  # plugin codes are on by default


def test_noqa(bad):
    assert flake8_findings(bad("  # noqa: TL101")) == {}
    assert flake8_findings(bad("  # noqa")) == {}
    assert flake8_findings(bad("  # noqa: TL301")) != {}


def test_per_file_ignores(bad, tmp_path):
    path = bad()
    proc = run_flake8("--select=TL", "--per-file-ignores=evaluate.py:TL101", path, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""


def test_syntax_errors_are_left_to_e999(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("for batch in val_loader:\n    out = model(\n")
    proc = run_flake8("--select=TL,E999", path)
    assert "E999" in proc.stdout and "TL" not in proc.stdout.replace(str(tmp_path), "")


def test_stdin_with_display_name(bad):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=TL", "--stdin-display-name=shown.py", "-"],
        input=SOURCE.format(noqa=""), capture_output=True, text=True,
    )
    assert proc.stdout.startswith("shown.py:7:21: TL101 ")


def test_opt_in_rules_run_only_when_named():
    opt_in = next(p for p in FIXTURES.iterdir() if p.name.startswith("TL106"))
    bad = opt_in / "bad.py"
    assert flake8_findings(bad, select="TL") == {}
    named = flake8_findings(bad, select="TL,TL106")
    assert {code for _, _, code in named[str(bad)]} == {"TL106"}
    extended = run_flake8("--select=TL", "--extend-select=TL10", bad)
    assert "TL106" in extended.stdout
