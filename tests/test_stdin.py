"""Editors pipe the buffer: ``torchlint check --stdin-filename PATH -`` and flake8's ``-``."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import STORED_LOSS, run_cli

STORED = STORED_LOSS
BAD = STORED.format(suffix="")


def test_stdin_is_reported_under_the_given_name(project):
    proc = run_cli("check", "--stdin-filename", "src/train.py", "-", cwd=project, stdin=BAD)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("src/train.py:10:9: TL301 ")
    assert not (project / "src").exists()  # the name is only a name


def test_stdin_filename_alone_reads_stdin(project):
    proc = run_cli("check", "--stdin-filename", "train.py", cwd=project, stdin=BAD)
    assert proc.returncode == 1 and proc.stdout.startswith("train.py:10:9: TL301 ")


def test_dash_without_a_name_is_stdin(project):
    proc = run_cli("check", "-", cwd=project, stdin=BAD)
    assert proc.returncode == 1 and proc.stdout.startswith("stdin:10:9: TL301 ")


def test_clean_stdin(project):
    proc = run_cli("check", "--stdin-filename", "x.py", "-", cwd=project, stdin="import torch\n")
    assert (proc.returncode, proc.stdout) == (0, "All checks passed!\n")


def test_noqa_applies_on_stdin(project):
    proc = run_cli("check", "--stdin-filename", "x.py", "-", cwd=project,
                   stdin=STORED.format(suffix="  # noqa: TL301"))
    assert proc.returncode == 0, proc.stdout


def test_config_applies_by_the_stdin_name(project):
    (project / "pyproject.toml").write_text(
        '[tool.torchlint]\nexclude = ["generated"]\nper-file-ignores = { "scripts/*" = ["TL301"] }\n'
    )
    ignored = run_cli("check", "--stdin-filename", "scripts/run.py", "-", cwd=project, stdin=BAD)
    assert ignored.returncode == 0, ignored.stdout
    excluded = run_cli("check", "--stdin-filename", "generated/model.py", "-", cwd=project, stdin=BAD)
    assert (excluded.returncode, excluded.stdout) == (0, "All checks passed!\n")
    checked = run_cli("check", "--stdin-filename", "src/run.py", "-", cwd=project, stdin=BAD)
    assert checked.returncode == 1


def test_stdin_json_and_full(project):
    proc = run_cli("check", "--output-format", "json", "--stdin-filename", "a/b.py", "-", cwd=project, stdin=BAD)
    record, = json.loads(proc.stdout)
    assert (record["path"], record["line"], record["code"]) == ("a/b.py", 10, "TL301")
    full = run_cli("check", "--output-format", "full", "--stdin-filename", "a/b.py", "-", cwd=project, stdin=BAD)
    assert "10 |         losses.append(loss)\n   |         ^^^" in full.stdout


def test_stdin_syntax_error_is_a_finding_not_a_crash(project):
    proc = run_cli("check", "--stdin-filename", "x.py", "-", cwd=project, stdin="for x in loader:\n    f(\n")
    assert proc.returncode == 1 and "x.py:" in proc.stdout and "TL001" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_dash_with_other_paths_is_a_usage_error(project):
    (project / "a.py").write_text("import torch\n")
    proc = run_cli("check", "-", "a.py", cwd=project, stdin=BAD)
    assert proc.returncode == 2 and "cannot be combined" in proc.stderr


def test_flake8_reads_stdin(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "-", "--stdin-display-name=x.py", "--select=TL"],
        input=BAD, capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines() == [proc.stdout.splitlines()[0]]
    assert proc.stdout.startswith("x.py:10:9: TL301 ")
    # the same position as the CLI gives for the same buffer
    cli = run_cli("check", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin=BAD)
    assert cli.stdout.splitlines()[0].split(" TL301")[0] == proc.stdout.split(" TL301")[0]


def test_flake8_stdin_noqa(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "-", "--stdin-display-name=x.py", "--select=TL"],
        input=STORED.format(suffix="  # noqa: TL301"), capture_output=True, text=True, cwd=tmp_path,
        timeout=300,
    )
    assert (proc.returncode, proc.stdout) == (0, "")
