"""The ruff/flake8 options of ``torchlint check``: output, fixing, file selection, --jobs.

Each test fails without its option: argparse rejects an unknown option with exit 2.
"""
from __future__ import annotations

import ast
import io
import os

import pytest

from conftest import STORED_LOSS
from test_cli import CLEAN, write
from torchlint import runner
from torchlint.cli import main
from torchlint.reporters._common import wants_color
from torchlint.request import LintRequest

STORED = STORED_LOSS.format(suffix="")


def check(*args, capsys):
    """As test_cli's, without the cache: these tests compare outputs of runs on one tree."""
    code = main(["check", "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


# -- output and summaries -------------------------------------------------------

def test_statistics_counts_per_code_and_marks_the_fixable(project, capsys):
    write(project, "a.py", STORED)
    write(project, "b.py", STORED)
    code, out, _ = check("--statistics", "--unsafe-fixes", ".", capsys=capsys)
    assert code == 1
    assert out.splitlines() == ["2  TL301  [*] graph-kept-across-iterations",
                                "[*] fixable with the --fix option."]
    # Without --unsafe-fixes TL301's (unsafe) fix is not one --fix would apply: no column.
    assert check("--statistics", ".", capsys=capsys)[1] == "2  TL301  graph-kept-across-iterations\n"


def test_count_prints_only_the_number(project, capsys):
    write(project, "a.py", STORED)
    write(project, "b.py", STORED)
    assert check("--count", ".", capsys=capsys)[:2] == (1, "2\n")


def test_quiet_drops_the_summary_and_verbose_lists_files_on_stderr(project, capsys):
    write(project, "a.py", STORED)
    code, out, _ = check("-q", "a.py", capsys=capsys)
    assert code == 1 and len(out.splitlines()) == 1 and out.startswith("a.py:10:9: TL301")
    code, out, err = check("-v", "a.py", capsys=capsys)
    assert "Found 1 finding" in out
    assert "checked a.py" in err and "checked 1 file in " in err


def test_output_file_takes_the_report(project, capsys):
    write(project, "a.py", STORED)
    code, out, _ = check("-o", "report.txt", "a.py", capsys=capsys)
    assert code == 1 and out == ""
    assert (project / "report.txt").read_text().startswith("a.py:10:9: TL301")
    assert check("-o", project / "no" / "such" / "r.txt", "a.py", capsys=capsys)[0] == 2


def test_color_always_never_and_the_environment(project, capsys, monkeypatch):
    write(project, "a.py", STORED)
    out = check("--color", "always", "a.py", capsys=capsys)[1]
    assert out.startswith("\x1b[1ma.py\x1b[0m:10:9: \x1b[1;31mTL301\x1b[0m tensor")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in check("a.py", capsys=capsys)[1]
    assert "\x1b[" not in check("--color", "never", "a.py", capsys=capsys)[1]
    assert "\x1b[" in check("--output-format", "full", "a.py", capsys=capsys)[1]


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_auto_colour_only_on_a_terminal_and_no_color_wins_over_it():
    assert wants_color("auto", _Tty(), environ={})
    assert not wants_color("auto", io.StringIO(), environ={})
    assert not wants_color("auto", _Tty(), environ={"NO_COLOR": "1"})
    assert wants_color("auto", io.StringIO(), environ={"NO_COLOR": "1", "FORCE_COLOR": "1"})
    assert wants_color("auto", _Tty(), environ={"NO_COLOR": ""})  # empty: not set, as ruff


def test_show_files_lists_what_would_be_checked(project, capsys):
    write(project, "a.py", STORED)
    write(project, "pkg/b.py", CLEAN)
    write(project, "notes.txt", "x")
    code, out, _ = check("--show-files", ".", capsys=capsys)
    assert (code, out.split()) == (0, ["a.py", os.path.join("pkg", "b.py")])


def test_show_settings_names_the_config_and_what_it_resolves_to(project, capsys):
    write(project, "torchlint.toml", 'ignore = ["TL302"]\nexclude = ["gen"]\n'
                                     '[per-file-ignores]\n"tests/*" = ["TL301"]\n')
    write(project, "tests/t.py", CLEAN)
    code, out, _ = check("--show-settings", "tests/t.py", capsys=capsys)
    assert code == 0
    assert f"Config file: {project / 'torchlint.toml'}" in out
    codes = out.split("Enabled codes")[1].splitlines()[0]
    assert "TL101" in codes and "TL301" not in codes and "TL302" not in codes
    assert "exclude: gen" in out and "tests/* = TL301  (config)" in out


# -- fixing -----------------------------------------------------------------------

def test_fix_only_reports_the_fixes_and_exits_zero(project, capsys):
    path = write(project, "a.py", STORED)
    code, out, _ = check("--fix-only", "--unsafe-fixes", "a.py", capsys=capsys)
    assert (code, out) == (0, "Fixed 1 finding in 1 file.\n")
    assert "losses.append(loss.detach())" in path.read_text()
    # Nothing fixable (no --unsafe-fixes): still exit 0, and the finding is not listed.
    write(project, "b.py", STORED)
    assert check("--fix-only", "b.py", capsys=capsys)[:2] == (0, "No findings fixed.\n"
                                                                "1 fix available with --unsafe-fixes.\n")


def test_fix_only_says_how_many_unsafe_fixes_were_held_back(project, capsys):
    """It printed only "No findings fixed.", with no hint that an unsafe fix was waiting."""
    write(project, "b.py", STORED)
    write(project, "c.py", STORED.replace("losses", "kept"))
    code, out, _ = check("--fix-only", "b.py", "c.py", capsys=capsys)
    assert (code, out) == (0, "No findings fixed.\n2 fixes available with --unsafe-fixes.\n")
    code, out, _ = check("--fix-only", "--show-fixes", "b.py", capsys=capsys)
    assert (code, out) == (0, "No findings fixed.\n1 fix available with --unsafe-fixes.\n")
    assert check("--fix-only", "--quiet", "b.py", capsys=capsys)[:2] == (0, "")
    assert check("--fix-only", "--unsafe-fixes", "b.py", capsys=capsys)[:2] == (0, "Fixed 1 finding in 1 file.\n")


def test_show_fixes_lists_each_files_fixes(project, capsys):
    write(project, "a.py", STORED)
    code, out, _ = check("--fix", "--unsafe-fixes", "--show-fixes", "a.py", capsys=capsys)
    assert code == 0
    assert "Fixed 1 finding:\n- a.py:\n    1 × TL301 (graph-kept-across-iterations)\n" in out


def test_add_noqa_adds_and_merges_and_the_next_run_is_clean(project, capsys):
    a = write(project, "a.py", STORED.replace("losses.append(loss)", "losses.append(loss)  # noqa: E501"))
    b = write(project, "b.py", STORED)
    code, out, _ = check("--add-noqa", ".", capsys=capsys)
    assert (code, out) == (0, "Added 2 noqa comments in 2 files.\n")
    assert "losses.append(loss)  # noqa: E501, TL301\n" in a.read_text()
    assert "losses.append(loss)  # noqa: TL301\n" in b.read_text()
    for path in (a, b):
        ast.parse(path.read_text())
    assert check(".", capsys=capsys)[:2] == (0, "All checks passed!\n")


def test_add_noqa_leaves_a_line_ending_inside_a_string_alone(project, capsys):
    source = STORED.replace("losses.append(loss)", 'losses.append(loss); s = """\n"""')
    path = write(project, "a.py", source)
    code, out, err = check("--add-noqa", "a.py", capsys=capsys)
    assert out == "Added 0 noqa comments in 0 files.\n" and "a.py:10: no noqa comment added" in err
    assert path.read_text() == source


def test_add_noqa_skips_notebooks_with_a_note(project, capsys):
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": STORED.splitlines(keepends=True)}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = write(project, "n.ipynb", json.dumps(nb))
    before = path.read_text()
    code, out, err = check("--add-noqa", "n.ipynb", capsys=capsys)
    assert "n.ipynb: notebook skipped" in err and path.read_text() == before


# -- selection and discovery ---------------------------------------------------------

def test_exclude_replaces_and_extend_exclude_adds(project, capsys):
    write(project, "torchlint.toml", 'exclude = ["gen"]\n')
    write(project, "gen/a.py", STORED)
    write(project, "old/b.py", STORED)
    write(project, "c.py", STORED)
    assert check("--show-files", ".", capsys=capsys)[1].split() == ["c.py", os.path.join("old", "b.py")]
    assert check("--show-files", "--exclude", "old", ".", capsys=capsys)[1].split() == [
        "c.py", os.path.join("gen", "a.py")]
    assert check("--show-files", "--extend-exclude", "old,c.py", ".", capsys=capsys)[1].split() == []


def test_force_exclude_drops_excluded_files_named_on_the_command_line(project, capsys):
    write(project, "torchlint.toml", 'exclude = ["gen"]\n')
    write(project, "gen/a.py", STORED)
    assert check("gen/a.py", capsys=capsys)[0] == 1  # named: checked, as before
    assert check("--force-exclude", "gen/a.py", capsys=capsys)[:2] == (0, "All checks passed!\n")


def test_precommit_hooks_pass_force_exclude():
    from conftest import ROOT

    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entries = [line for line in hooks.splitlines() if line.strip().startswith("entry:")]
    assert entries and all("--force-exclude" in line for line in entries)


def test_extend_ignore_and_per_file_ignores(project, capsys):
    write(project, "tests/a.py", STORED)
    write(project, "b.py", STORED)
    assert check("--extend-ignore", "TL301", ".", capsys=capsys)[0] == 0
    code, out, _ = check("--per-file-ignores", "tests/*:TL3", ".", capsys=capsys)
    assert code == 1 and out.startswith("b.py:") and "tests" not in out
    code, _, err = check("--per-file-ignores", "tests/*", ".", capsys=capsys)
    assert code == 2 and "expected PATTERN:CODES" in err
    code, _, err = check("--per-file-ignores", "tests/*:TL999", ".", capsys=capsys)
    assert code == 2 and "unknown rule code 'TL999'" in err


def test_isolated_reads_no_config(project, capsys):
    write(project, "torchlint.toml", 'ignore = ["TL301"]\n')
    write(project, "a.py", STORED)
    assert check("a.py", capsys=capsys)[0] == 0
    assert check("--isolated", "a.py", capsys=capsys)[0] == 1
    assert check("--isolated", "--config", "torchlint.toml", "a.py", capsys=capsys)[0] == 2


def test_gitignore_respected_when_walking_nested_and_negated(project, capsys):
    write(project, ".gitignore", "gen/\n*_pb2.py\n")
    write(project, "gen/a.py", STORED)
    write(project, "x_pb2.py", STORED)
    write(project, "pkg/.gitignore", "local.py\n!keep_pb2.py\n")
    write(project, "pkg/local.py", STORED)
    write(project, "pkg/keep_pb2.py", STORED)
    write(project, "pkg/sub/local.py", STORED)  # a bare name matches at any depth below its file
    write(project, "other/local.py", STORED)  # pkg's .gitignore does not reach here
    files = check("--show-files", ".", capsys=capsys)[1].split()
    assert files == [os.path.join("other", "local.py"), os.path.join("pkg", "keep_pb2.py")]
    everything = check("--show-files", "--no-respect-gitignore", ".", capsys=capsys)[1].split()
    assert len(everything) == 6
    write(project, "torchlint.toml", "respect-gitignore = false\n")
    assert len(check("--show-files", ".", capsys=capsys)[1].split()) == 6


def test_respect_gitignore_must_be_a_boolean(project, capsys):
    write(project, "torchlint.toml", 'respect-gitignore = "no"\n')
    write(project, "a.py", CLEAN)
    code, _, err = check("a.py", capsys=capsys)
    assert code == 2 and "respect-gitignore: expected true or false" in err


# -- --jobs -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, message", [("x", "expected a whole number"), ("-3", "must be 0")])
def test_jobs_rejects_bad_values_with_a_message(value, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--jobs", value, "."])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


class _InlinePool:
    """A ProcessPoolExecutor stand-in that runs each submitted chunk at once, in order,
    noting how many workers it was asked for and the paths it was handed."""
    started: list = []
    handed: list = []

    def __init__(self, max_workers, **kwargs):
        self.started.append(max_workers)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, chunk):
        import concurrent.futures

        self.handed.extend(path for path, _ in chunk)
        future = concurrent.futures.Future()
        future.set_result(fn(chunk))
        return future


@pytest.fixture
def inline_pool(monkeypatch):
    import concurrent.futures  # the runner imports its pool only when it starts one

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _InlinePool)
    monkeypatch.setattr(_InlinePool, "started", [])
    monkeypatch.setattr(_InlinePool, "handed", [])
    return _InlinePool


def test_jobs_is_capped_at_the_core_count(monkeypatch, inline_pool):
    monkeypatch.setattr(runner, "usable_cpu_count", lambda: 4)
    runner._run([("missing.py", LintRequest.of(()))] * 100, jobs=1000)  # (path, request)
    assert inline_pool.started == [4]


def test_workers_get_the_biggest_files_first_and_results_keep_the_input_order(tmp_path, monkeypatch, inline_pool):
    monkeypatch.setattr(runner, "usable_cpu_count", lambda: 2)
    sizes = [3, 40, 1, 500, 20] * 4
    paths = []
    for i, size in enumerate(sizes):
        path = tmp_path / f"m{i}.py"
        path.write_text("x = 1\n" + "#" * size + "\n")
        paths.append(str(path))
    request = LintRequest.of({"TL301"})
    work = [(path, request) for path in paths] + [(str(tmp_path / "gone.py"), request)]
    outcomes = runner._run(work, jobs=2)
    assert [result.path for result, _ in outcomes] == [path for path, _ in work]
    assert inline_pool.handed[:4] == [paths[i] for i in (3, 8, 13, 18)]  # the 500-byte files
    assert inline_pool.handed[-1].endswith("gone.py")  # unreadable: size 0, last


@pytest.mark.parametrize("line, expected", [
    ("x = 1\n", "x = 1  # noqa: TL301\n"),
    ("x = 1  # noqa:E501,W291 why\n", "x = 1  # noqa:E501,W291, TL301 why\n"),  # after the last code
    ("x = 1  # noqa: E501  # noqa: TL302\r\n", "x = 1  # noqa: E501, TL301  # noqa: TL302\r\n"),  # the first counts
    ("x = 1  # noqa\n", "x = 1  # noqa\n"),  # a bare noqa silences everything already
])
def test_noqa_comment_merges_into_the_first_list(line, expected):
    from torchlint.add_noqa import with_noqa
    from torchlint.noqa import suppressed

    assert with_noqa(line, ["TL301"])[0] == expected
    assert suppressed(expected, "TL301")


def test_add_noqa_refuses_stdin(project, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(STORED.encode())))
    code, _, err = check("--add-noqa", "-", capsys=capsys)
    assert code == 2 and "cannot be used on stdin" in err
