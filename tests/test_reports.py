"""Reports that say what happened (issue 16, items 9-11).

TL001 stands where Python's own compile() says the error is, with Python's
message, on every surface; everything Python refuses is TL001; a file that
could not be checked is never a quiet pass.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from torchlint.cli import main
from torchlint.engine import lint_source
from torchlint.rules import ALL_RULES

# Sources Python refuses, with what compile() says: (line, column).
REFUSED = {
    "python 2 print": ("import os\n\nprint 'hi'\nx = 1\n", (3, 1)),
    "stray dollar": ("x = 1\ny = $\n", (2, 5)),
    "tokenizer: unterminated string": ("x = 1\ny = 'abc\n", (2, 5)),
    "tokenizer: tabs and spaces": ("def f():\n\treturn 1\n        return 2\n", (3, 1)),
    "unclosed bracket": ("import torch\nx = (1,\ny = 2\n", (2, 5)),
    "201 nested parentheses": ("x = " + "(" * 201 + "1" + ")" * 201 + "\n", None),
}


def _python_says(source: str):
    try:
        compile(source, "f.py", "exec")
    except SyntaxError as exc:
        return exc.lineno, exc.offset, exc.msg
    raise AssertionError("Python accepts this source")


@pytest.mark.parametrize("source", [case for case, _ in REFUSED.values()], ids=list(REFUSED))
def test_tl001_is_where_and_what_python_says(source):
    line, col, message = _python_says(source)
    diagnostics = lint_source(source, "f.py", ALL_RULES).diagnostics
    assert [(d.line, d.col, d.code, d.message) for d in diagnostics] == [
        (line, col, "TL001", f"syntax error: {message}")
    ]


def test_the_positions_listed_above_are_python_s():
    for name, (source, where) in REFUSED.items():
        if where is not None:
            assert _python_says(source)[:2] == where, name


def test_a_null_byte_even_in_a_comment_is_tl001_at_the_byte():
    diagnostics = lint_source("import torch\nx = 1  # a\0b\n", "f.py", ALL_RULES).diagnostics
    assert [(d.line, d.col, d.code) for d in diagnostics] == [(2, 11, "TL001")]
    assert "null bytes" in diagnostics[0].message


def test_an_undecodable_byte_is_reported_on_its_line():
    diagnostics = lint_source(b"x = 1\ny = '\xe9\xff'\n", "f.py", ALL_RULES).diagnostics
    assert [(d.line, d.col, d.code) for d in diagnostics] == [(2, 6, "TL001")]


def test_flake8_e999_and_the_cli_agree_on_the_line(tmp_path):
    source, _ = REFUSED["python 2 print"]
    (tmp_path / "old.py").write_text(source)
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=E999", "old.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    cli = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "old.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    # flake8 reports syntax errors itself (E999; the plugin stays out of it) and
    # computes its own column; the line is Python's on both.
    assert flake8.stdout.startswith("old.py:3:") and "E999" in flake8.stdout
    assert cli.stdout.startswith("old.py:3:1: TL001 syntax error: Missing parentheses")


def test_the_editor_range_is_python_s(tmp_path):
    pytest.importorskip("pygls")
    from pygls.workspace import TextDocument

    from torchlint import server

    source, _ = REFUSED["python 2 print"]
    document = TextDocument("file:///old.py", source)
    (d,) = lint_source(source, "old.py", ALL_RULES).diagnostics
    lsp = server.to_lsp(d, document)
    assert (lsp.range.start.line, lsp.range.start.character) == (2, 0)
    assert (lsp.range.end.line, lsp.range.end.character) == (2, 10)  # compile()'s end_offset


def test_a_notebook_syntax_error_is_in_its_own_cell(tmp_path, capsys):
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": ["import torch\n", "x = (1,\n", "y = 2\n"]},
        {"cell_type": "markdown", "metadata": {}, "source": ["# notes"]},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": ["z = 3\n"]},
    ]
    nb = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb))
    main(["check", "--no-cache", "--output-format", "json", str(tmp_path / "nb.ipynb")])
    (d,) = json.loads(capsys.readouterr().out)
    assert (d["cell"], d["line"], d["column"], d["code"]) == (1, 2, 5, "TL001")
    # Python's message, and what happened to the rest (the other cells are still checked)
    assert d["message"] == ("syntax error: '(' was never closed "
                            "(this cell is left out; the other cells are checked without it)")


# -- nothing unchecked passes quietly (item 11) -----------------------------------------

def test_a_broken_notebook_is_a_finding_with_its_json_position(tmp_path, capsys):
    (tmp_path / "nb.ipynb").write_text('{"cells": [\n  {"cell_type": "code",,}]}')
    code = main(["check", "--no-cache", str(tmp_path / "nb.ipynb")])
    out = capsys.readouterr().out
    assert code == 1 and "nb.ipynb:2:24: TL001 not a valid notebook: invalid JSON" in out
    assert "All checks passed!" not in out


def test_a_missing_path_never_reads_as_all_passed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text("x = 1\n")
    code = main(["check", "--no-cache", "ok.py", "missing.py"])
    out, err = capsys.readouterr()
    assert code == 2 and "missing.py: no such file or directory" in err
    assert "All checks passed!" not in out and "1 path not checked" in out


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")
def test_a_fifo_named_on_the_command_line_is_not_called_missing(tmp_path, capsys, monkeypatch):
    import os

    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "pipe.py")
    code = main(["check", "--no-cache", "pipe.py"])
    out, err = capsys.readouterr()
    assert code == 1 and "pipe.py:1:1: TL001 not a regular file" in out
    assert "no such file" not in err


# -- small lies (item 13) ---------------------------------------------------------------

STORED = """\
import torch

def train(model, loader, optimizer, criterion):
    running = 0
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss
    print(running)
"""


@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
@pytest.mark.parametrize("value", ["", " , "])
def test_an_empty_selector_is_a_usage_error(tmp_path, capsys, option, value):
    (tmp_path / "train.py").write_text(STORED)
    code = main(["check", "--no-cache", option, value, str(tmp_path / "train.py")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "no rule selector given" in err


def test_a_selector_matching_nothing_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "train.py").write_text(STORED)
    assert main(["check", "--no-cache", "--select", "TL999", str(tmp_path / "train.py")]) == 2
    assert "unknown rule code 'TL999'" in capsys.readouterr().err


@pytest.mark.parametrize("code, name", [("TL001", "unreadable-file"), ("tl002", "internal-error")])
def test_rule_explains_the_status_codes(capsys, code, name):
    assert main(["rule", code]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {code.upper()}: {name}\n") and "Not a rule" in out


def test_fix_keeps_the_final_line_end_of_a_lone_cr_file(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_bytes(STORED.replace("\n", "\r").encode())
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", str(path)])
    data = path.read_bytes()
    assert b"running += loss.detach()\r" in data and data.endswith(b"print(running)\r")
    assert b"\n" not in data


def test_diff_refuses_an_output_format_it_would_ignore(tmp_path, capsys):
    (tmp_path / "train.py").write_text(STORED)
    code = main(["check", "--no-cache", "--diff", "--output-format", "json", str(tmp_path / "train.py")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "cannot be combined with --output-format json" in err


def test_stdin_fix_reports_what_remains_in_the_format_asked(tmp_path):
    source = STORED.replace("running += loss", "losses.append(loss)").replace("running = 0", "losses = []")
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--fix", "--output-format", "json", "--no-cache",
         "--stdin-filename", "train.py", "-"],
        input=source, capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert proc.stdout == source  # the unsafe fix is not applied: the finding remains
    assert [d["code"] for d in json.loads(proc.stderr)] == ["TL301"]


@pytest.mark.parametrize("format_, pattern", [
    ("github", "::error file=nb.ipynb,line={line},endLine={line},title=TL301::cell 2, line 10: TL301"),
    ("gitlab", '"begin": {line},'),
])
def test_notebook_annotations_point_at_the_line_of_the_notebook_file(tmp_path, capsys, monkeypatch,
                                                                      format_, pattern):
    lines = STORED.splitlines(keepends=True)
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# train"]},
                    {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": lines}],
          "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4,
          "nbformat_minor": 5}
    text = json.dumps(nb, indent=1) + "\n"
    (tmp_path / "nb.ipynb").write_text(text)
    json_line = next(n for n, line in enumerate(text.splitlines(), 1) if "running += loss" in line)
    monkeypatch.chdir(tmp_path)
    main(["check", "--no-cache", "--output-format", format_, "nb.ipynb"])
    out = capsys.readouterr().out
    # the finding is on line 10 of cell 2: the JSON line of its 10th source string
    assert pattern.format(line=json_line) in out, out


def test_a_named_config_without_a_torchlint_table_is_an_error(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "train.py").write_text(STORED)
    code = main(["check", "--no-cache", "--config", str(tmp_path / "pyproject.toml"), str(tmp_path / "train.py")])
    assert code == 2 and "no [tool.torchlint] table" in capsys.readouterr().err


NOQA_CASES = {
    "codes are compared as written": "        running += loss  # NOQA: tl301\n",
    "only the first noqa comment counts": "        running += loss  # noqa: E501  # noqa: TL301\n",
    "a matching code silences": "        running += loss  # noqa: TL301\n",
    "a prefix silences": "        running += loss  # noqa:TL3\n",
    "a bare noqa silences": "        running += loss  # NoQA\n",
}


@pytest.mark.parametrize("line", NOQA_CASES.values(), ids=list(NOQA_CASES))
def test_noqa_means_the_same_in_the_cli_and_in_flake8(tmp_path, line):
    (tmp_path / "train.py").write_text(STORED.replace("        running += loss\n", line))
    cli = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format",
                          "concise", "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=TL", "train.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = lambda out: sorted(line.split(" ")[0] for line in out.splitlines() if " TL" in line)  # noqa: E731
    assert lines(cli.stdout) == lines(flake8.stdout)


def test_the_noqa_cases_above_differ(tmp_path):
    from torchlint.noqa import suppressed

    verdicts = {name: suppressed(line, "TL301") for name, line in NOQA_CASES.items()}
    assert verdicts == {"codes are compared as written": False, "only the first noqa comment counts": False,
                        "a matching code silences": True, "a prefix silences": True, "a bare noqa silences": True}


def test_a_non_python_file_named_on_the_command_line_is_skipped(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("losses.append(loss)\n")
    (tmp_path / "train").write_text("#!/usr/bin/env python3\n" + STORED)
    code = main(["check", "--no-cache", "notes.txt", "train"])
    out, err = capsys.readouterr()
    assert "notes.txt: not a Python file" in err
    assert "train:11:9: TL301" in out and "1 path not checked" in out and code == 1


def test_the_editor_lints_python_documents_only():
    pytest.importorskip("pygls")
    from pygls.workspace import TextDocument

    from torchlint import server

    assert server._is_python(TextDocument("file:///a/notes.md", STORED, language_id="markdown"), "/a/notes.md") is False
    assert server._is_python(TextDocument("file:///a/x.txt", STORED, language_id="python"), "/a/x.txt") is True
    assert server._is_python(TextDocument("file:///a/t.py", STORED), "/a/t.py") is True
    assert server._is_python(TextDocument("file:///a/t.txt", STORED), "/a/t.txt") is False
