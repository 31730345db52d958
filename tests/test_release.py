"""Version and release facts that users copy: the version the package, its metadata,
``torchlint --version``, the VS Code extension and the changelog give agree, and the
commits the docs tell users to pin (the GitHub Action, installs from the repository)
exist and hold what is pinned."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib.metadata import version

import pytest

yaml = pytest.importorskip("yaml")

from conftest import ROOT, run_cli  # noqa: E402
from torchlint import __version__  # noqa: E402

# `uses: torchlint/torchlint@<sha>` and `github.com/torchlint/torchlint@<sha>`
PINNED = re.compile(r"torchlint/torchlint@([0-9a-f]+)\b")
PINNING_FILES = ["README.md", "docs/ci.md", "docs/index.md", "docs/editors.md", "docs/coexistence.md", "action.yml"]


def test_version_agrees_everywhere():
    assert version("torchlint") == __version__, "reinstall: the installed metadata is older than the source"
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"torchlint {__version__}"
    extension = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert extension["version"] == __version__


def test_changelog_starts_with_this_version():
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings and headings[0] == __version__


def _pins():
    for name in PINNING_FILES:
        for sha in PINNED.findall((ROOT / name).read_text()):
            yield name, sha


def test_pins_name_full_commits_that_hold_the_action():
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    if subprocess.run([git, "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                      text=True).stdout.strip() == "true":
        pytest.skip("a shallow clone may not hold the pinned commits")
    pins = list(_pins())
    assert any(name == "docs/ci.md" for name, _ in pins), "the action's usage example pins a commit"
    for name, sha in pins:
        # a full SHA: GitHub resolves short ones ambiguously and they are not immutable pins
        assert len(sha) == 40, f"{name}: {sha} is not a full commit SHA"
        found = subprocess.run([git, "show", f"{sha}:action.yml"], cwd=ROOT, capture_output=True, text=True)
        assert found.returncode == 0, f"{name}: commit {sha} does not exist here or holds no action.yml"
        # the inputs docs/ci.md describes are the ones the pinned action takes
        pinned = yaml.safe_load(found.stdout)["inputs"]
        assert pinned.keys() == yaml.safe_load((ROOT / "action.yml").read_text())["inputs"].keys(), name
