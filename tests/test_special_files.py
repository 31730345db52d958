"""The files torchlint reads besides the code (ignore, config, requirement and cache files)
as a FIFO, a link to /dev/zero or a huge file: a one-line
message, never a hang, a MemoryError or a traceback (docs/robustness.md)."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from test_robustness import SIBLING, _tree

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="FIFOs and /dev/zero")

CACHE_FILE = Path(".torchlint_cache", "results-v2.json")


def _bounded() -> None:
    """In the child: a runaway read of /dev/zero fails in a second instead of filling the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


def _check(folder: Path, *args) -> subprocess.CompletedProcess:
    # A short timeout: a run blocked on a FIFO is the failure this file looks for.
    return subprocess.run([sys.executable, "-m", "torchlint", "check", *args, "."], cwd=folder,
                          capture_output=True, text=True, timeout=30, preexec_fn=_bounded)


def _special(path: Path, kind: str, limit_mib: int = 10) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:  # a sparse file just over the limit: costs no disk
        with open(path, "wb") as fh:
            fh.truncate(limit_mib * 2**20 + 1)


KINDS = ["fifo", "/dev/zero", "huge"]
WHY = {"fifo": "not a regular file", "/dev/zero": "not a regular file", "huge": "larger than 10 MiB"}


def _one_clear_line(proc, *parts) -> None:
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if all(part in line for part in parts)]
    assert len(lines) == 1, (parts, proc.stderr)


@pytest.mark.parametrize("kind", KINDS)
def test_a_gitignore_that_is_not_a_file_is_named_and_the_walk_goes_on(tmp_path, kind):
    _special(_tree(tmp_path) / ".gitignore", kind)
    proc = _check(tmp_path, "--no-cache")
    assert proc.returncode == 1 and SIBLING in proc.stdout, (proc.stdout, proc.stderr)
    _one_clear_line(proc, ".gitignore", WHY[kind], "nothing is ignored by it")


@pytest.mark.parametrize("name", ["requirements.txt", "requirements-dev.txt", "pyproject.toml"])
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_dependency_or_config_file_that_is_not_a_file_is_a_config_error(tmp_path, kind, name):
    """Read for the target torch version (and pyproject.toml as a config): the run cannot
    know what applies, so it says so and exits 2, as for a broken config."""
    tree = _tree(tmp_path)
    if name == "pyproject.toml":
        (tree / name).unlink()
        (tree / "requirements.txt").write_text("numpy\n")  # the project's folder, without a pyproject
    _special(tree / name, kind)
    proc = _check(tmp_path, "--no-cache")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    _one_clear_line(proc, name, "cannot read: not a regular file")


def test_a_target_given_on_the_command_line_reads_no_dependency_list(tmp_path):
    _special(_tree(tmp_path) / "requirements.txt", "fifo")
    proc = _check(tmp_path, "--no-cache", "--target-torch-version", "2.4")
    assert proc.returncode == 1 and SIBLING in proc.stdout, proc.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_a_named_config_that_is_not_a_file_is_one_line(tmp_path, kind):
    _special(_tree(tmp_path) / "ci.toml", kind)
    proc = _check(tmp_path, "--no-cache", "--config", "ci.toml")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    _one_clear_line(proc, "ci.toml: cannot read: " + WHY[kind])


@pytest.mark.parametrize("kind", KINDS)
def test_a_cache_file_that_is_not_a_file_is_not_read(tmp_path, kind):
    _special(_tree(tmp_path) / CACHE_FILE, kind, limit_mib=128)
    proc = _check(tmp_path)
    assert proc.returncode == 1 and SIBLING in proc.stdout, (proc.stdout, proc.stderr)
    why = WHY[kind].replace("10 MiB", "128 MiB")
    _one_clear_line(proc, "results-v2.json", why, "the cache was not read")


def test_a_cache_file_that_is_a_directory_leaves_no_temporary_file(tmp_path):
    (_tree(tmp_path) / CACHE_FILE).mkdir(parents=True)
    for _ in range(2):
        proc = _check(tmp_path)
        assert proc.returncode == 1 and SIBLING in proc.stdout, (proc.stdout, proc.stderr)
        _one_clear_line(proc, "results-v2.json", "is a directory", "the cache was not read")
    assert sorted(p.name for p in (tmp_path / CACHE_FILE.parent).iterdir()) == [".gitignore", CACHE_FILE.name]

