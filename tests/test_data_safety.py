"""Data safety: a save made while fixing is kept, owners and hard links survive a
fix, workers die with their parent, and a damaged cache is only a miss.

Each test here failed before its fix (docs/robustness.md lists the guarantees).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_robustness import STORED, _alive, _descendants, as_from_a_terminal, busy_run
from torchlint.cli import main

FIXED_LINE = "losses.append(loss.detach())"


def _fix(path: Path, capsys) -> tuple:
    code = main(["check", "--fix", "--unsafe-fixes", "--no-cache", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


# -- a save made while fixing ---------------------------------------------------

USER_SAVE = "# the user's own edit, saved while torchlint was fixing\n"


@pytest.mark.parametrize("moment", ["fix_data", "_owned_as"], ids=["while computing the fix",
                                                                      "after the new file is written"])
def test_a_save_made_while_fixing_is_kept(tmp_path, monkeypatch, capsys, moment):
    """The file is checked after the fix is computed and again just before the rename."""
    from torchlint import fix_files

    path = tmp_path / "train.py"
    path.write_text(STORED)
    step = getattr(fix_files, moment)

    def step_while_the_user_saves(*args):
        done = step(*args)
        path.write_text(USER_SAVE)
        return done

    monkeypatch.setattr(fix_files, moment, step_while_the_user_saves)
    _, _, err = _fix(path, capsys)
    assert path.read_text() == USER_SAVE
    assert "changed while it was being fixed; left as it is" in err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".torchlint-")]


def test_an_unchanged_file_is_still_fixed(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(STORED)
    code, _, err = _fix(path, capsys)
    assert FIXED_LINE in path.read_text() and code == 0, err


# -- owner, group, mode and hard links --------------------------------------------

@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_owner_group_and_mode_survive_a_fix(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(STORED)
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o640)
    _fix(path, capsys)
    st = path.stat()
    assert FIXED_LINE in path.read_text()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (65534, 65534, 0o640)


def test_hard_links_still_share_the_fixed_file(tmp_path, capsys):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(STORED)
    os.link(first, second)
    _fix(first, capsys)
    assert os.path.samefile(first, second)
    assert FIXED_LINE in second.read_text()


@pytest.mark.parametrize("second_name", ["symlink", "hard link", "./a.py"])
def test_one_file_named_twice_is_fixed_once_and_reported_clean(tmp_path, monkeypatch, capsys, second_name):
    """``--fix a.py link.py``: the file was fixed once, then a stale finding was reported
    under the other name and the exit was 1, while a new check was clean."""
    monkeypatch.chdir(tmp_path)
    Path("a.py").write_text(STORED)
    other = {"symlink": "link.py", "hard link": "hard.py", "./a.py": "./a.py"}[second_name]
    if second_name == "symlink":
        os.symlink("a.py", other)
    elif second_name == "hard link":
        os.link("a.py", other)
    code = main(["check", "--fix", "--unsafe-fixes", "--no-cache", "a.py", other])
    out, err = capsys.readouterr()
    assert (code, out) == (0, "Found 1 finding (1 fixed, 0 remaining).\n"), err
    assert FIXED_LINE in Path("a.py").read_text()


def test_an_owner_that_cannot_be_kept_means_writing_in_place(tmp_path, monkeypatch, capsys):
    path = tmp_path / "train.py"
    path.write_text(STORED)
    inode = path.stat().st_ino

    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chown", refuse)
    monkeypatch.setattr("torchlint.fix_files._owner", lambda path: (-1, -1))  # as if owned by another
    _fix(path, capsys)
    assert FIXED_LINE in path.read_text()
    assert path.stat().st_ino == inode
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".torchlint-")]


@pytest.fixture
def own_signal_handlers():
    """``main`` installs its handlers in this process: the next tests get pytest's back."""
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize("step", ["tempfile.mkstemp", "os.fsync", "os.chmod", "os.replace"])
def test_a_signal_while_the_temporary_file_exists_leaves_none(tmp_path, monkeypatch, capsys, own_signal_handlers,
                                                              step, signum):
    """The signal arrives right after each step of the write (the process signals itself,
    so the moment is exact); the run stops as it would have, the file is old or new, and
    no ``.torchlint-*.tmp`` is left. Right after ``mkstemp`` it once was."""
    import importlib

    path = tmp_path / "train.py"
    path.write_text(STORED)
    module_name, name = step.split(".")
    module = importlib.import_module(module_name)
    real, sent = getattr(module, name), []

    def then_signal(*args, **kwargs):
        done = real(*args, **kwargs)
        if not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)
        return done

    monkeypatch.setattr(module, name, then_signal)
    code, _, err = _fix(path, capsys)
    assert sent and code == 128 + signum and "torchlint: interrupted" in err, (code, err)
    assert path.read_text() in (STORED, STORED.replace("losses.append(loss)", FIXED_LINE))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".torchlint-")]


def test_a_writable_file_in_a_read_only_folder_is_fixed_in_place(tmp_path, monkeypatch, capsys):
    """No temporary file can be made beside it: the file is rewritten in place, with the
    checks a file with several links gets, instead of being refused."""
    import tempfile

    folder = tmp_path / "read-only"
    folder.mkdir()
    path = folder / "train.py"
    path.write_text(STORED)
    inode = path.stat().st_ino
    if os.geteuid() == 0:  # root creates files in any folder: refuse as the folder's mode would
        real = tempfile.mkstemp

        def refuse(*args, dir=None, **kwargs):
            if dir is not None and os.path.realpath(dir) == os.path.realpath(folder):
                raise PermissionError(13, "Permission denied", dir)
            return real(*args, dir=dir, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    folder.chmod(0o555)
    try:
        code, _, err = _fix(path, capsys)
    finally:
        folder.chmod(0o755)
    assert code == 0, err
    assert FIXED_LINE in path.read_text() and path.stat().st_ino == inode
    assert [p.name for p in folder.iterdir()] == ["train.py"]


# -- workers die with their parent --------------------------------------------------

def _gone(workers, within: float = 5) -> list:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    return [pid for pid in workers if _alive(pid)]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigkill_of_the_main_process_leaves_no_worker_holding_the_pipes(tmp_path):
    proc, workers = busy_run(tmp_path)
    assert workers, "no worker processes started"
    try:
        proc.kill()
        # EOF on stdout and stderr comes only when every worker has let go of them.
        proc.communicate(timeout=10)
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert _gone(workers) == []


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigterm_shuts_the_pool_down_like_ctrl_c(tmp_path):
    proc, workers = busy_run(tmp_path)
    assert workers, "no worker processes started"
    try:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, (proc.returncode, err[-2000:])
    assert "torchlint: interrupted" in err and "Traceback" not in err
    assert _gone(workers) == []


def _cpu_time(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return -1
    return int(fields[11]) + int(fields[12])  # utime + stime


def _no_core_dump() -> None:
    import resource

    as_from_a_terminal()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGQUIT: no core file to write


def _run_with_an_idle_worker(tmp_path: Path) -> tuple:
    """A ``--jobs 2`` check in which one worker parses a big file for seconds while the other
    has nothing left to do: (the process, its workers), returned once a worker is seen idle
    (its CPU time still) beside a busy one. An idle worker is where a parent-death signal
    used to raise, and print a traceback, most reliably."""
    (tmp_path / "big.py").write_text((STORED.replace("losses", "kept") + "\n") * 400)
    for index in range(20):
        (tmp_path / f"small{index:02d}.py").write_text("x = 1\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--jobs", "2", "."],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=_no_core_dump,
    )
    deadline, still = time.monotonic() + 60, {}
    while time.monotonic() < deadline and proc.poll() is None:
        workers = _descendants(proc.pid)
        times = {pid: _cpu_time(pid) for pid in workers}
        busy = [pid for pid in workers if times[pid] > still.get(pid, (-1, 0))[0]]
        still = {pid: (times[pid], 0 if pid in busy else still[pid][1] + 1) for pid in workers}
        if len(workers) == 2 and busy and any(count >= 4 for _, count in still.values()):
            return proc, workers
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("no idle worker beside a busy one")


def _signalled(tmp_path: Path, send) -> tuple:
    """``send(proc, workers)`` to a run with an idle worker; (exit status, stdout, stderr,
    workers) once stdout and stderr are closed, which is when every worker has let go."""
    proc, workers = _run_with_an_idle_worker(tmp_path)
    try:
        send(proc, workers)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, err, workers


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGQUIT], ids=lambda s: signal.Signals(s).name)
def test_workers_that_lose_their_parent_exit_quietly(tmp_path, signum):
    code, _, err, workers = _signalled(tmp_path, lambda proc, workers: proc.send_signal(signum))
    # Not a line: a worker's traceback could be cut short by its watching thread's exit.
    assert (code, err) == (-signum, ""), err[-3000:]
    assert _gone(workers) == []


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("group", [False, True], ids=["torchlint alone", "its process group"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_a_signal_that_stops_the_run_is_one_line(tmp_path, signum, group):
    """SIGHUP (a closed terminal) stops a run as SIGTERM does; sent to the whole group
    (Ctrl-C in a terminal, a service manager's stop), a worker waiting for work printed
    a KeyboardInterrupt or Terminated traceback."""
    code, _, err, workers = _signalled(
        tmp_path, lambda proc, workers: (os.killpg if group else os.kill)(proc.pid, signum))
    assert (code, err) == (128 + signum, "torchlint: interrupted\n"), err[-3000:]
    assert _gone(workers) == []


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_worker_killed_on_its_own_is_an_error_not_a_traceback(tmp_path):
    """The OOM killer or a kill of one pid: the run cannot be complete (exit 2, one line)."""
    def kill_the_idle_worker(proc, workers):  # the parent once waited for it forever
        os.kill(min(workers, key=_cpu_time), signal.SIGTERM)

    code, out, err, _ = _signalled(tmp_path, kill_the_idle_worker)
    assert (code, err) == (2, "torchlint: error: a worker process was killed; the run is incomplete\n")
    assert "All checks passed" not in out


# -- a damaged cache ---------------------------------------------------------------

def _cache_file(root: Path) -> Path:
    return root / ".torchlint_cache" / "results-v2.json"


def _check(root: Path, capsys) -> tuple:
    code = main(["check", "--output-format", "json", str(root / "train.py")])
    out, err = capsys.readouterr()
    return code, [d["code"] for d in json.loads(out)], err


@pytest.mark.parametrize("content", ["[]", "null", '"a string"', "42", "{"])
def test_a_cache_file_of_the_wrong_shape_is_a_miss_and_is_rewritten(tmp_path, monkeypatch, capsys, content):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(STORED)
    _cache_file(tmp_path).parent.mkdir()
    _cache_file(tmp_path).write_text(content)
    assert _check(tmp_path, capsys)[:2] == (1, ["TL301"])
    assert isinstance(json.loads(_cache_file(tmp_path).read_text()), dict)
    assert _check(tmp_path, capsys)[:2] == (1, ["TL301"])


@pytest.mark.parametrize("damage", [
    lambda record: record.pop("errors"),
    lambda record: record.pop("path"),
    lambda record: record.__setitem__("diagnostics", [{"line": "x"}]),
    lambda record: record.__setitem__("diagnostics", "not a list"),
    lambda record: record["diagnostics"][0].__setitem__("fix", "maybe"),
    lambda record: record["diagnostics"][0].__setitem__("line", None),
])
def test_a_damaged_cache_entry_is_a_miss(tmp_path, monkeypatch, capsys, damage):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(STORED)
    assert _check(tmp_path, capsys)[:2] == (1, ["TL301"])
    entries = json.loads(_cache_file(tmp_path).read_text())
    for record in entries.values():
        damage(record)
    _cache_file(tmp_path).write_text(json.dumps(entries))
    code, codes, err = _check(tmp_path, capsys)
    assert (code, codes) == (1, ["TL301"]) and "Traceback" not in err
