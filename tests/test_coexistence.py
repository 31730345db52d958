"""torchlint beside the linters a project already runs (docs/coexistence.md):

- ruff with RUF100 (unused noqa) and RUF102 (invalid noqa code) leaves torchlint's
  ``# noqa: TL301`` alone once ``lint.external = ["TL"]`` says the codes belong to
  another tool, while torchlint's own TL010 still reports a TL code that suppresses
  nothing;
- flake8 with torchlint and flake8-bugbear: each plugin reports its own codes.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import STORED_LOSS, run_cli

pytest.importorskip("ruff")

# TL301 on line 10 is suppressed (the noqa is used); line 11's TL302 suppresses nothing.
NOQA = STORED_LOSS.format(suffix="  # noqa: TL301").replace(
    "    return losses\n", "    total = 0  # noqa: TL302\n    return losses\n")
RUFF_CONFIG = '[tool.ruff.lint]\nexternal = ["TL"]\n'


def _ruff(folder) -> list:
    """ruff's RUF100 and RUF102 findings on train.py, as (line, code)."""
    # --preview: RUF102 is stable in recent ruff, a preview rule in older releases
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--preview",
                           "--select", "RUF100,RUF102", "--output-format", "json", "train.py"],
                          cwd=folder, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((f["location"]["row"], f["code"]) for f in json.loads(proc.stdout))


def test_ruff_leaves_torchlint_noqa_codes_to_torchlint(tmp_path):
    (tmp_path / "train.py").write_text(NOQA)
    # without the setting ruff calls both TL codes invalid (so this test can see it)
    assert _ruff(tmp_path) == [(10, "RUF102"), (11, "RUF102")]

    (tmp_path / "pyproject.toml").write_text(RUFF_CONFIG)
    assert _ruff(tmp_path) == []

    # torchlint still judges its own codes: only the TL302 that suppresses nothing
    proc = run_cli("check", "--no-cache", "--extend-select", "TL010", "--output-format", "concise", "train.py",
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [line.split(": ", 1)[1] for line in proc.stdout.splitlines()] == [
        "TL010 unused noqa code TL302: suppressed nothing on this line"]
    assert proc.stdout.startswith("train.py:11:")


MUTABLE_DEFAULT = "\n\ndef collect(batch, seen=[]):\n    seen.append(batch)\n    return seen\n"


def test_flake8_runs_torchlint_beside_bugbear_each_with_its_own_codes(tmp_path):
    pytest.importorskip("bugbear")
    (tmp_path / "train.py").write_text(STORED_LOSS.format(suffix="") + MUTABLE_DEFAULT)
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "TL,B",
                           "--format", "%(row)d %(code)s", "train.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.split("\n")[:-1] == ["10 TL301", "14 B006"]

    # flake8 says which plugin owns which code: TL is torchlint's, B bugbear's
    plugins = subprocess.run([sys.executable, "-m", "flake8", "--bug-report"], capture_output=True, text=True,
                             timeout=120)
    names = {plugin["plugin"] for plugin in json.loads(plugins.stdout)["plugins"]}
    assert {"torchlint", "flake8-bugbear"} <= names
