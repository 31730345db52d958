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
    assert d["message"] == "syntax error: '(' was never closed"


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
