"""The pre-commit hook, run for real: ``pre-commit try-repo <this checkout> torchlint``."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory):
    """One pre-commit cache for the module: the hook's virtualenv is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(repo: Path, home: Path):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "torchlint", "--all-files"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=900,
    )


def _repo(tmp_path: Path, name: str, source: str) -> Path:
    repo = tmp_path / name
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "train.py").write_text(source)
    _git("add", "train.py", cwd=repo)
    return repo


def test_hook_fails_on_a_hazard_and_passes_on_clean_code(tmp_path, hook_home):
    bad = _repo(tmp_path, "bad", (FIXTURES / "TL301_stored_loss" / "bad.py").read_text())
    proc = _try_repo(bad, hook_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:25:13: TL301" in proc.stdout

    good = _repo(tmp_path, "good", (FIXTURES / "TL301_stored_loss" / "good.py").read_text())
    proc = _try_repo(good, hook_home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_hook_checks_notebooks(tmp_path, hook_home):
    import json

    loop = (FIXTURES / "TL301_stored_loss" / "bad.py").read_text()
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Training\n"]},
             {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": ["%matplotlib inline\n", loop]}]
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    repo = tmp_path / "nb"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "train.ipynb").write_text(json.dumps(nb, indent=1))
    _git("add", "train.ipynb", cwd=repo)
    proc = _try_repo(repo, hook_home)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.ipynb:cell 2:line 26:col 13: TL301" in proc.stdout
