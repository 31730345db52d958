"""What a repository can hold, through the real ``torchlint`` command in a subprocess.

Every odd file gets a clear line on stderr or a finding, never a traceback;
exit 2 only where the run could not do its job; and a known finding in a
sibling file is still reported (``bad.py:10:9: TL301``).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import STORED_LOSS, run_cli
from torchlint.request import LintRequest

STORED = STORED_LOSS.format(suffix="")
SIBLING = "bad.py:10:9: TL301"


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "bad.py").write_text(STORED)
    return tmp_path


def _check(folder: Path, *args):
    return run_cli("check", "--no-cache", *args, cwd=folder)


def _assert_sibling_reported(proc):
    assert SIBLING in proc.stdout, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr


# -- file contents -------------------------------------------------------------------

ODD_BUT_VALID = {
    "empty.py": b"",
    "whitespace.py": b" \n\t\n   \n",
    "bom.py": b"\xef\xbb\xbfimport torch\nx = torch.zeros(1)\n",
    "bom_only.py": b"\xef\xbb\xbf",
    "crlf.py": b"import torch\r\nfor x in loader:\r\n    y = x\r\n",
    "mixed_endings.py": b"import torch\r\nfor x in loader:\n    y = x\r    z = y\n",
    "cr_only.py": b"import torch\rx = 1\r",
    "tabs.py": b"import torch\nfor x in loader:\n\ty = x\n\tif y:\n\t\tz = y\n",
    "latin1_declared.py": b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n",
    "cp1252_declared.py": b"# vim: set fileencoding=cp1252 :\nq = '\x93quoted\x94'\n",
    "long_line.py": b"import torch\nx = [" + b"1, " * 200_000 + b"]\n",
    "long_string.py": b"s = '" + b"a" * 2_000_000 + b"'\n",
    "no_final_newline.py": b"import torch\nx = 1",
    "form_feed.py": b"import torch\n\x0c\nx = 1\n",
}

BROKEN = {
    "latin1_undeclared.py": (b"x = '\xe9t\xe9'\n", "TL001 cannot decode file"),
    "bad_declaration.py": (b"# -*- coding: klingon -*-\nx = 1\n", "TL001 cannot decode file"),
    "wrong_declaration.py": (b"# coding: ascii\nx = '\xc3\xa9'\n", "TL001 cannot decode file"),
    "null_byte.py": (b"import torch\nx = 1\x00\n", "TL001"),
    "truncated.py": (STORED[:STORED.index("model(x)") + 7].encode(), "TL001 syntax error"),
    "inconsistent_tabs.py": (b"if x:\n        y = 1\n\tz = 2\n", "TL001"),
    "too_deep.py": (b"import torch\nfor x in loader:\n    loss.backward()\nx = " + b"-" * 10_000 + b"1\n",
                    "TL001 syntax error: too deeply nested"),
}


@pytest.mark.parametrize("name", sorted(ODD_BUT_VALID))
def test_odd_but_valid_files_are_clean(tmp_path, name):
    _tree(tmp_path)
    (tmp_path / name).write_bytes(ODD_BUT_VALID[name])
    proc = _check(tmp_path, name, "bad.py")
    assert proc.returncode == 1 and proc.stderr == "", proc.stderr
    assert name not in proc.stdout
    _assert_sibling_reported(proc)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_files_are_a_tl001_finding(tmp_path, name):
    _tree(tmp_path)
    data, expected = BROKEN[name]
    (tmp_path / name).write_bytes(data)
    proc = _check(tmp_path, ".")
    assert proc.returncode == 1, proc.stderr
    [line] = [line for line in proc.stdout.splitlines() if line.startswith(name)]
    assert expected in line
    _assert_sibling_reported(proc)


def test_bom_and_crlf_positions_match_plain_files(tmp_path):
    _tree(tmp_path)
    (tmp_path / "bom_crlf.py").write_bytes(b"\xef\xbb\xbf" + STORED.replace("\n", "\r\n").encode())
    (tmp_path / "tabs.py").write_bytes(STORED.replace("    ", "\t").encode())
    proc = _check(tmp_path, ".")
    assert "bom_crlf.py:10:9: TL301" in proc.stdout
    assert "tabs.py:10:3: TL301" in proc.stdout  # columns count characters, as flake8 does
    _assert_sibling_reported(proc)


def test_syntax_warnings_of_the_linted_code_are_not_printed(tmp_path):
    _tree(tmp_path)
    (tmp_path / "warns.py").write_text("import torch\nx = 1()\ny = x is 1\nfor b in loader:\n    loss.backward()\n")
    proc = _check(tmp_path, ".")
    assert proc.stderr == ""
    _assert_sibling_reported(proc)


# -- the file system -------------------------------------------------------------------

def test_symlinks_are_not_followed_and_loops_do_not_hang(tmp_path):
    (tmp_path / "repo").mkdir()
    tree = _tree(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text(STORED)
    (tree / "link_out").symlink_to(outside, target_is_directory=True)
    (tree / "file_out.py").symlink_to(outside / "leak.py")
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "sub").mkdir()
    (tree / "sub" / "up").symlink_to("..", target_is_directory=True)
    (tree / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    (tree / "self.py").symlink_to("self.py")  # a link to itself
    proc = _check(tree, ".")
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.splitlines()[:-1] == [line for line in proc.stdout.splitlines()[:-1] if line.startswith("bad.py:")]
    _assert_sibling_reported(proc)
    # Named on the command line, a link is a path the user gave: checked.
    named = _check(tree, "file_out.py", "bad.py")
    assert "file_out.py:10:9: TL301" in named.stdout
    dangling = _check(tree, "dangling.py", "bad.py")
    assert dangling.returncode == 2 and "dangling.py: no such file or directory" in dangling.stderr
    _assert_sibling_reported(dangling)


def _is_root_like(path: Path) -> bool:
    """chmod 000 stops nobody running as root (or with CAP_DAC_OVERRIDE)."""
    try:
        path.read_bytes()
    except PermissionError:
        return False
    return True


def test_unreadable_file_is_reported_and_siblings_checked(tmp_path):
    _tree(tmp_path)
    secret = tmp_path / "secret.py"
    secret.write_text(STORED)
    secret.chmod(0)
    try:
        if _is_root_like(secret):
            pytest.skip("running as root: chmod 000 does not stop reads here "
                        "(tests/test_cli.py covers the message with a patched open)")
        proc = _check(tmp_path, ".")
        assert proc.returncode == 1
        assert "torchlint: secret.py: cannot read file: Permission denied" in proc.stderr
        _assert_sibling_reported(proc)
    finally:
        secret.chmod(0o644)


def test_unreadable_directory_is_reported_and_siblings_checked(tmp_path):
    _tree(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "inner.py").write_text(STORED)
    locked.chmod(0)
    try:
        try:
            os.listdir(locked)
            pytest.skip("running as root: chmod 000 does not stop listing a folder here")
        except PermissionError:
            pass
        proc = _check(tmp_path, ".")
        assert proc.returncode == 1
        assert "locked: cannot read directory: Permission denied" in proc.stderr
        _assert_sibling_reported(proc)
    finally:
        locked.chmod(0o755)


def test_unreadable_directory_message_even_as_root(tmp_path, monkeypatch, capsys):
    """The same path as above with the denial simulated, so that it runs under root too."""
    from torchlint.cli import main

    _tree(tmp_path)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inner.py").write_text(STORED)
    monkeypatch.chdir(tmp_path)
    real_scandir = os.scandir

    def guarded(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    code = main(["check", "--no-cache", "."])
    out, err = capsys.readouterr()
    assert code == 1
    assert "torchlint: ./locked: cannot read directory: Permission denied" in err
    assert SIBLING in out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_fifo_named_like_python_does_not_block(tmp_path):
    _tree(tmp_path)
    os.mkfifo(tmp_path / "pipe.py")
    proc = _check(tmp_path, ".")  # run_cli's timeout turns a hang into a failure
    assert proc.returncode == 1
    assert "pipe.py:1:1: TL001 not a regular file; skipped" in proc.stdout
    _assert_sibling_reported(proc)


def test_file_that_vanishes_between_discovery_and_reading(tmp_path, monkeypatch, capsys):
    from torchlint import discover as discover_mod
    from torchlint.cli import main

    _tree(tmp_path)
    (tmp_path / "gone.py").write_text(STORED)
    monkeypatch.chdir(tmp_path)
    real = discover_mod.discover

    def discover_then_delete(paths, config, **options):
        found = real(paths, config, **options)
        (tmp_path / "gone.py").unlink()
        return found

    monkeypatch.setattr(discover_mod, "discover", discover_then_delete)
    code = main(["check", "--no-cache", "."])
    out, err = capsys.readouterr()
    assert code == 1
    assert "gone.py:1:1: TL001 cannot read file: No such file or directory" in out
    assert SIBLING in out


# -- linted code never runs ----------------------------------------------------------

def test_linted_code_is_never_imported_or_evaluated(tmp_path):
    _tree(tmp_path)
    marker = tmp_path / "EXECUTED"
    payloads = {
        "writes_marker.py": f"open({str(marker)!r}, 'w').write('ran')\n",
        "exits.py": "import sys\nsys.exit(3)\n",
        "hangs.py": "while True:\n    pass\n",
        "shell.py": f"__import__('os').system('touch {marker}')\n",
        "evals.py": f"eval(compile('open({str(marker)!r}, \"w\")', 'x', 'eval'))\n",
        "encoding_trick.py": "# -*- coding: utf-8 -*-\nimport os; os._exit(4)\n",
        "conftest.py": f"open({str(marker)!r}, 'w')\n",
        "__init__.py": f"open({str(marker)!r}, 'w')\n",
        "setup.py": f"open({str(marker)!r}, 'w')\n",
    }
    for name, code in payloads.items():
        # torch-shaped, so the rules parse them rather than the gate skipping them
        (tmp_path / name).write_text("import torch\n" + code + STORED.split("\n", 1)[1])
    proc = _check(tmp_path, ".")
    assert proc.returncode == 1, proc.stderr
    assert not marker.exists()
    for name in payloads:
        if name != "conftest.py":  # a pytest file: TL301 leaves tests alone
            assert f"{name}:" in proc.stdout  # each was analysed (it holds the TL301 pattern)
    _assert_sibling_reported(proc)


# -- scale and interruption ----------------------------------------------------------

SCALE_FILES = int(os.environ.get("TORCHLINT_SCALE_FILES", "20000"))

_PEAK_RSS = textwrap.dedent("""
    import os, subprocess, sys, time
    # Run torchlint and sample the resident memory of it and every descendant
    # from /proc every 20 ms; print the peak of the sum and the exit code.
    out = open(os.environ["TORCHLINT_SCALE_OUT"], "w")
    proc = subprocess.Popen(sys.argv[1:], stdout=out, stderr=subprocess.PIPE)
    def tree_rss(root):
        children = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(pid))
        total, todo = 0, [root]
        while todo:
            pid = todo.pop()
            todo.extend(children.get(pid, ()))
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                pass
        return total
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.02)
    err = proc.stderr.read().decode()
    print(proc.returncode, peak, repr(err[-500:]))
""")


@pytest.mark.timeout(1800)  # its subprocess alone is allowed 900 s; pyproject.toml allows a test 600
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc to measure memory")
def test_many_small_files_finish_within_memory(tmp_path):
    """A generated repository runs to completion; the whole process tree stays under 400 MB.

    20,000 files, one in a hundred with a TL301 finding (parsed by libcst), the
    rest tiny (gated out); TORCHLINT_SCALE_FILES changes the count. Every
    finding must be reported.
    """
    tree = _tree(tmp_path)
    per_folder = 500
    for index in range(SCALE_FILES):
        folder = tree / f"pkg{index // per_folder:03d}"
        if index % per_folder == 0:
            folder.mkdir()
        text = STORED if index % 100 == 0 else f"import torch\nX{index} = torch.zeros({index % 7})\n"
        (folder / f"mod{index:05d}.py").write_text(text)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, sys.executable, "-m", "torchlint", "check", "--no-cache",
         "--jobs", "2", "."],
        capture_output=True, text=True, cwd=tree, timeout=900,
        env={**os.environ, "TORCHLINT_SCALE_OUT": str(tmp_path / "out.txt")},
    )
    elapsed = time.monotonic() - started
    code, peak, err = proc.stdout.split(" ", 2)
    print(f"{SCALE_FILES} files: {elapsed:.1f} s, peak RSS of the process tree {int(peak) / 2**20:.0f} MiB")
    assert code == "1", (proc.stdout, proc.stderr)
    findings = (tmp_path / "out.txt").read_text().count(": TL301 ")
    assert findings == 1 + len(range(0, SCALE_FILES, 100))
    assert int(peak) < 400 * 2**20


def _descendants(pid: int) -> list:
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def as_from_a_terminal() -> None:
    """In the child, before exec: SIGINT at its default, as a shell in a terminal leaves it.

    A job started in the background of a non-interactive shell (``nohup ... &``, some CI
    runners) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler: torchlint rightly keeps ignoring Ctrl-C there, which is not what these
    tests are about."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def busy_run(tmp_path: Path) -> tuple:
    """A parallel ``check`` with enough parse-heavy work to still be busy when signalled:
    (the process, in a session of its own so that any orphan is findable; its workers)."""
    tree = _tree(tmp_path)
    for index in range(400):
        (tree / f"train{index:03d}.py").write_text(STORED.replace("losses", f"losses_{index}") * 6)
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--jobs", "2", "."],
        cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=as_from_a_terminal,
    )
    deadline = time.monotonic() + 60
    workers = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.1)
        workers = _descendants(proc.pid)
    time.sleep(0.5)
    return proc, workers


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and sends SIGINT")
def test_ctrl_c_stops_a_parallel_run_promptly_without_orphans(tmp_path):
    proc, workers = busy_run(tmp_path)
    try:
        assert workers, "no worker processes started"
        interrupted = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        out, err = proc.communicate(timeout=20)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "torchlint: interrupted" in err
    assert "Traceback" not in err, err[-2000:]
    assert took < 10, took
    time.sleep(0.5)
    left = [pid for pid in workers if _alive(pid)]
    assert not left, f"worker processes still running after Ctrl-C: {left}"


@pytest.mark.skipif(sys.platform != "linux", reason="sends SIGINT")
def test_ctrl_c_to_the_main_process_only(tmp_path):
    """``kill -INT`` of torchlint alone (not its group) must stop the workers too."""
    proc, workers = busy_run(tmp_path)
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if _alive(pid)]


# -- configuration ------------------------------------------------------------------

@pytest.mark.parametrize("toml, message", [
    ("[tool.torchlint]\nselect = 3\n", "[tool.torchlint] select: expected a list of strings"),
    ("[tool.torchlint]\nselect = [3]\n", "[tool.torchlint] select: expected a list of strings"),
    ("[tool.torchlint]\nexclude = {a = 1}\n", "[tool.torchlint] exclude: expected a list of strings"),
    ("[tool.torchlint]\nper-file-ignores = [\"TL301\"]\n", "[tool.torchlint] per-file-ignores: expected a table"),
    ("[tool.torchlint]\nper-file-ignores = { \"a.py\" = \"TL301\" }\n", "[tool.torchlint] per-file-ignores: expected a table"),
    ("[tool]\ntorchlint = 1\n", "[tool.torchlint] must be a table"),
    ("tool = 1\n", "pyproject.toml"),
    ("[tool.torchlint]\nignore = [\"TL99\"]\n", "[tool.torchlint] ignore: unknown rule code 'TL99'"),
    ("[tool.torchlint]\nextend-select = [\"E501\"]\n", "[tool.torchlint] extend-select: unknown rule code 'E501'"),
    ("[tool.torchlint]\nselect = [\"TL3\"]\nignore = [\"tl3\"]\n", "both name TL3"),
    ("[tool.torchlint]\nselect = []\nselect = []\n", "invalid TOML"),
    ("\xff\xfe[tool]", "pyproject.toml"),
    ("[tool.torchlint]\nexclude = [\"a\", 1]\n", "[tool.torchlint] exclude: expected a list of strings"),
])
def test_config_mistakes_name_the_file_and_key(tmp_path, toml, message):
    _tree(tmp_path)
    (tmp_path / "pyproject.toml").write_bytes(toml.encode("latin-1"))
    proc = _check(tmp_path, "bad.py")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "pyproject.toml" in proc.stderr and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") <= 2  # one clear line, not a dump


def test_config_that_is_a_directory_or_missing(tmp_path):
    _tree(tmp_path)
    for given in ("nope.toml", "."):
        proc = _check(tmp_path, "--config", given, "bad.py")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert given in proc.stderr


def test_command_line_mistakes_are_one_clear_line(tmp_path):
    _tree(tmp_path)
    for args, message in ((["--select", "XYZ"], "unknown rule code 'XYZ'"),
                          (["--jobs", "-3"], "--jobs"),
                          (["--select", "TL301", "--ignore", "TL301"], "TL301")):
        proc = _check(tmp_path, *args, "bad.py")
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


# -- fixes ---------------------------------------------------------------------------

def test_fix_on_a_file_too_deep_for_the_main_thread_stack(tmp_path):
    """10,000 chained ``and``s: libcst's parser crashed the fixer (SIGSEGV) before it ran on a big stack."""
    _tree(tmp_path)
    deep = tmp_path / "deep.py"
    deep.write_text(STORED + "\nz = " + " and ".join(["a"] * 10_000) + "\n")
    proc = _check(tmp_path, "--fix", "--unsafe-fixes", "deep.py", "bad.py")
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "losses.append(loss.detach())" in deep.read_text()
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc and sends SIGINT")
def test_ctrl_c_during_fix_leaves_every_file_old_or_new(tmp_path):
    from torchlint import fix_files
    from torchlint.fixer import allowed_fixes
    from torchlint.rules import ALL_RULES

    tree = _tree(tmp_path)
    old = (STORED.replace("losses", "kept") + "\n") * 30  # over 8 KB: fixed on the big-stack thread
    new = fix_files.fix_data("x.py", old.encode(), LintRequest.for_rules(ALL_RULES), allowed_fixes(True)).new
    assert new is not None and new != old.encode()
    paths = []
    for index in range(40):
        path = tree / f"fix{index:03d}.py"
        path.write_text(old)
        paths.append(path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchlint", "check", "--no-cache", "--jobs", "1", "--fix", "--unsafe-fixes", "."],
        cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if any(p.read_bytes() != old.encode() for p in paths):
                break  # writing has begun
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    contents = [p.read_bytes() for p in paths]
    assert all(c in (old.encode(), new) for c in contents)
    assert not [p for p in tree.iterdir() if p.name.startswith(".torchlint-")]  # no temp file left


def _ctrl_c_in_position_codegen(monkeypatch, at_token: int) -> None:
    """Ctrl-C as it lands in the position codegen that places findings
    (``positions._SpanState``): KeyboardInterrupt on the ``at_token``-th token."""
    from torchlint.positions import _SpanState

    add_token, tokens = _SpanState.add_token, iter(range(10**9))

    def interrupted(self, value: str) -> None:
        if next(tokens) == at_token:
            raise KeyboardInterrupt
        add_token(self, value)

    monkeypatch.setattr(_SpanState, "add_token", interrupted)


def test_ctrl_c_in_the_position_codegen_while_fixing_stops_the_fix(monkeypatch):
    """The race behind a flaky Ctrl-C test: the fix reported "internal error: KeyError" and went on."""
    from torchlint import fix_files
    from torchlint.fixer import allowed_fixes
    from torchlint.rules import ALL_RULES

    _ctrl_c_in_position_codegen(monkeypatch, at_token=40)
    with pytest.raises(KeyboardInterrupt):
        fix_files.fix_data("x.py", STORED.encode(), LintRequest.for_rules(ALL_RULES), allowed_fixes(True))


def test_ctrl_c_in_the_position_codegen_while_checking_exits_130(tmp_path, monkeypatch, capsys):
    from torchlint.cli import main

    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    _ctrl_c_in_position_codegen(monkeypatch, at_token=3)  # inside the finding's statement
    assert main(["check", "--no-cache", "--jobs", "1", "bad.py"]) == 130
    assert "KeyError" not in capsys.readouterr().err


def test_ctrl_c_mid_statement_leaves_the_position_codegen_as_itself(monkeypatch):
    """libcst's own position state records a node's span in a ``finally``, which met a child
    never placed and raised a KeyError over the interrupt; torchlint's records nothing then."""
    import libcst as cst

    from torchlint import positions

    _ctrl_c_in_position_codegen(monkeypatch, at_token=5)
    module = cst.parse_module("def f(a, b):\n    return g(a)[b] + h(b)\n")
    with pytest.raises(KeyboardInterrupt):  # not a KeyError
        positions._ranges(module)


def test_an_interrupt_hidden_behind_an_error_in_a_finally_is_raised():
    """A library's ``finally`` that fails while a Ctrl-C unwinds (libcst's position codegen
    did) raises the interrupt again, not its own error."""
    from torchlint.safe_io import raise_hidden_interrupt

    with pytest.raises(KeyboardInterrupt):
        try:
            try:
                raise KeyboardInterrupt
            finally:
                {}["placed"]
        except KeyError as exc:
            raise_hidden_interrupt(exc)


def test_an_error_with_no_interrupt_behind_it_is_left_alone():
    from torchlint.safe_io import raise_hidden_interrupt

    try:
        try:
            raise ValueError("first")
        except ValueError as first:
            raise KeyError("second") from first
    except KeyError as exc:
        exc.__context__.__context__ = exc  # a cycle: the walk must still end
        raise_hidden_interrupt(exc)  # nothing to raise


def test_gate_checks_do_not_run_away_on_comment_and_bracket_runs(tmp_path):
    """A text check whose comments could end anywhere tried every split of a notebook's
    ``#####`` separator line after a ``.data``: hours for one file. run_cli's timeout turns
    a runaway into a failure; the file also goes through every rule's gate."""
    source = (Path(__file__).resolve().parent / "data" / "regressions" / "regex_runaway_comment_runs.py")
    (tmp_path / "notebook_cells.py").write_text(source.read_text() * 20)
    proc = _check(tmp_path, "--select", "TL", ".")
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
