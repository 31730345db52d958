"""The result cache keeps every file it has seen (least recently used out first, bounded),
lives where ``--cache-dir`` / ``TORCHLINT_CACHE_DIR`` say, and ``torchlint clean`` removes it."""
from __future__ import annotations

import json

import pytest

from conftest import STORED_LOSS as _TEMPLATE
from test_config import write
from torchlint import runner
from torchlint.cli import main
from torchlint.diagnostic import FileResult

CACHE = "results-v2.json"
STORED_LOSS = _TEMPLATE.format(suffix="")


def entries(folder) -> dict:
    return json.loads((folder / CACHE).read_text())


@pytest.fixture
def counted(monkeypatch):
    """How many files were linted (not answered from the cache), run by run."""
    linted = []
    real = runner._lint_path

    def counting(args):
        linted.append(args[0])
        return real(args)

    monkeypatch.setattr(runner, "_lint_path", counting)
    return linted


@pytest.fixture
def three_files(project):
    for name in ("a.py", "b.py", "c.py"):
        write(project, name, STORED_LOSS)
    return project


def test_a_one_file_run_leaves_the_other_files_cached(three_files, counted, capsys):
    assert main(["check", "--jobs", "1", "."]) == 1
    assert len(counted) == 3 and len(entries(three_files / ".torchlint_cache")) == 3
    write(three_files, "b.py", STORED_LOSS + "\n")  # b changes: one run for it alone
    main(["check", "--jobs", "1", "b.py"])
    assert counted[3:] == ["b.py"]
    del counted[:]
    main(["check", "--jobs", "1", "."])
    assert counted == []  # a and c still cached, and b's new content too
    capsys.readouterr()


def test_the_cache_keeps_the_most_recently_used_entries_up_to_its_limit(tmp_path):
    cache = runner.ResultCache(tmp_path, limit=3)
    for key in "abcde":
        cache.put(key, FileResult(f"{key}.py"))
    cache.save()
    assert list(entries(tmp_path)) == ["c", "d", "e"]
    cache = runner.ResultCache(tmp_path, limit=3)
    assert cache.get("c") is not None and cache.get("a") is None
    cache.put("f", FileResult("f.py"))
    cache.save()
    assert list(entries(tmp_path)) == ["e", "c", "f"]  # d: the least recently used


def test_a_run_that_only_hits_the_newest_entries_rewrites_nothing(tmp_path, monkeypatch):
    cache = runner.ResultCache(tmp_path)
    for key in "abc":
        cache.put(key, FileResult(f"{key}.py"))
    cache.save()
    written = []
    real_replace = runner.os.replace
    monkeypatch.setattr(runner.os, "replace", lambda *args: written.append(args) or real_replace(*args))

    def run(*keys, new=()):
        cache = runner.ResultCache(tmp_path)
        assert all(cache.get(key) is not None for key in keys)
        for key in new:
            cache.put(key, FileResult(f"{key}.py"))
        cache.save()
        return len(written), list(entries(tmp_path))

    assert run("c") == (0, ["a", "b", "c"])  # the newest already: the order stands
    assert run("b", "c") == (0, ["a", "b", "c"])
    assert run("a") == (1, ["b", "c", "a"])  # an older entry used: the order changes
    assert run("a", new="d") == (2, ["b", "c", "a", "d"])  # a new result: written


def test_the_code_fingerprint_changes_when_a_source_of_torchlint_does(monkeypatch, tmp_path):
    package = tmp_path / "torchlint"
    (package / "rules").mkdir(parents=True)
    (package / "runner.py").write_text("")
    (package / "rules" / "rule.py").write_text("x = 1\n")
    monkeypatch.setattr(runner, "__file__", str(package / "runner.py"))
    first = runner._code_fingerprint()
    assert runner._code_fingerprint() == first
    (package / "rules" / "rule.py").write_text("x = 22\n")
    edited = runner._code_fingerprint()
    assert edited != first
    (package / "rules" / "notes.txt").write_text("not a source")
    assert runner._code_fingerprint() == edited


def test_the_default_limit_bounds_a_real_run(three_files, monkeypatch, capsys):
    monkeypatch.setattr(runner, "MAX_ENTRIES", 2)
    main(["check", "--jobs", "1", "."])
    assert len(entries(three_files / ".torchlint_cache")) == 2
    capsys.readouterr()


def test_cache_dir_flag_beats_the_environment_which_beats_the_default(three_files, monkeypatch, capsys):
    monkeypatch.setenv("TORCHLINT_CACHE_DIR", str(three_files / "from_env"))
    main(["check", "a.py"])
    assert len(entries(three_files / "from_env")) == 1
    main(["check", "--cache-dir", "nested/from_flag", "a.py", "b.py"])
    assert len(entries(three_files / "nested" / "from_flag")) == 2
    assert not (three_files / ".torchlint_cache").exists()
    capsys.readouterr()


def test_clean_removes_the_default_the_environments_and_the_flags_cache(three_files, monkeypatch, capsys):
    main(["check", "a.py"])
    main(["check", "--cache-dir", "flagged", "a.py"])
    monkeypatch.setenv("TORCHLINT_CACHE_DIR", str(three_files / "from_env"))
    main(["check", "a.py"])
    capsys.readouterr()
    assert main(["clean", "--cache-dir", "flagged"]) == 0
    out = capsys.readouterr().out
    for folder in (".torchlint_cache", "flagged", "from_env"):
        assert not (three_files / folder).exists()
        assert folder in out
    assert main(["clean"]) == 0
    assert "No cache at" in capsys.readouterr().out


def test_clean_leaves_files_it_did_not_write(three_files, capsys):
    write(three_files, "shared/notes.txt", "keep me\n")
    main(["check", "--cache-dir", "shared", "a.py"])
    assert main(["clean", "--cache-dir", "shared"]) == 0
    assert "kept" in capsys.readouterr().out
    assert sorted(p.name for p in (three_files / "shared").iterdir()) == ["notes.txt"]


# A run answered wholly from the cache imports neither the engine (libcst) nor the
# rules, nor what only a cold run needs: start-up is most of a warm single-file check.
_HEAVY = ("libcst", "torchlint.engine", "torchlint.rules", "torchlint.model", "packaging",
          "concurrent.futures.process")
_DRIVER = """
import contextlib, io, json, sys
from torchlint.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.startswith(HEAVY))
print(json.dumps({"code": code, "out": out.getvalue(), "heavy": heavy}))
"""


def _fresh_process(*args) -> dict:
    """``torchlint ARGS`` in a new interpreter: exit code, stdout, the heavy modules it imported."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import torchlint

    env = dict(os.environ, PYTHONPATH=str(Path(torchlint.__file__).resolve().parents[1]))
    driver = f"HEAVY = {_HEAVY!r}\n{_DRIVER}"
    done = subprocess.run([sys.executable, "-c", driver, *args], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("options", [(), ("--statistics",), ("--output-format", "json")])
def test_a_warm_cached_check_imports_neither_libcst_nor_the_rules(project, options):
    write(project, "train.py", STORED_LOSS)
    cold = _fresh_process("check", "--no-cache", *options, "train.py")
    assert cold["heavy"] and cold["code"] == 1  # the findings came from linting
    _fresh_process("check", "train.py")  # fills the cache
    warm = _fresh_process("check", *options, "train.py")
    assert warm["heavy"] == []
    assert (warm["code"], warm["out"]) == (cold["code"], cold["out"])
