"""The pre-commit hook, run for real: ``pre-commit try-repo <this checkout> torchlint``."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT

# pre-commit builds the hook's virtualenv (a pip install): its runs may take up to 900 s each,
# more than pyproject.toml's ten minutes a test.
pytestmark = [pytest.mark.skipif(shutil.which("git") is None, reason="needs git"), pytest.mark.timeout(1800)]


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


# -- the snippet the docs show ------------------------------------------------------

SNIPPET_DOCS = (ROOT / "README.md", ROOT / "docs" / "ci.md")


def _snippet(doc: Path) -> dict:
    """The ``.pre-commit-config.yaml`` a doc shows: the yaml block under its pre-commit heading."""
    import re

    import yaml  # pre-commit's own dependency

    section = doc.read_text(encoding="utf-8").split("## pre-commit\n", 1)[1]
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))


def _git_out(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _pinned_commit() -> str:
    """The snippets' ``rev``, checked against this checkout's history.

    It is a commit on main rather than a tag: the repository has no release tag yet,
    and CI checkouts often fetch no tags. A shallow checkout (actions/checkout's
    default depth of 1) may lack the commit: then this skips and says why, rather
    than fail on how CI fetched; with the history there (a full clone, ``.ci/run`` in
    a developer's checkout) a rev that is not an ancestor of HEAD fails."""
    if _git_out("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    revs = {doc.name: _snippet(doc)["repos"][0]["rev"] for doc in SNIPPET_DOCS}
    assert len(set(revs.values())) == 1, revs
    rev = revs["README.md"]
    if _git_out("cat-file", "-e", f"{rev}^{{commit}}").returncode != 0:
        if _git_out("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            pytest.skip(f"shallow checkout without the pinned commit {rev}; fetch the history (fetch-depth: 0)")
        pytest.fail(f"the pre-commit snippet pins {rev}, which this repository does not have")
    assert _git_out("merge-base", "--is-ancestor", rev, "HEAD").returncode == 0, f"{rev} is not on this branch"
    return rev


def test_the_docs_pin_a_revision_this_repository_has():
    from torchlint.links import HOMEPAGE

    rev = _pinned_commit()
    for doc in SNIPPET_DOCS:
        repo = _snippet(doc)["repos"][0]
        assert repo["repo"] == HOMEPAGE and repo["hooks"][0]["id"] == "torchlint", doc
    hooks = _git_out("show", f"{rev}:.pre-commit-hooks.yaml")
    assert hooks.returncode == 0 and "- id: torchlint\n" in hooks.stdout


def test_the_readme_snippet_runs_as_written_from_a_fresh_clone(tmp_path, hook_home):
    """`rev: v0.1.0` named a tag that never existed. The README's snippet, with only
    ``repo:`` pointing at a fresh clone of this repository instead of GitHub (no network
    here), must install the hook and fail on a hazard."""
    import yaml

    rev = _pinned_commit()
    clone = tmp_path / "torchlint"
    _git("clone", "--quiet", "--no-local", str(ROOT), str(clone), cwd=tmp_path)
    config = _snippet(ROOT / "README.md")
    config["repos"][0]["repo"] = str(clone)
    user = _repo(tmp_path, "user", (FIXTURES / "TL301_stored_loss" / "bad.py").read_text())
    (user / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=user,
                          capture_output=True, text=True, env={**os.environ, "PRE_COMMIT_HOME": str(hook_home)},
                          timeout=900)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:25:13: TL301" in proc.stdout, proc.stdout + proc.stderr
    assert rev == config["repos"][0]["rev"]
