"""Jupyter notebooks: code cells linted as one program, IPython syntax masked, cell positions,
broken notebooks reported without stopping the run, and fixed cells written back in place."""
from __future__ import annotations

import json

import pytest

from torchlint import notebook
from torchlint.cli import main

PYTHON = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
          "language_info": {"name": "python"}}
LOOP = [
    "for x, y in loader:\n",
    "    optimizer.zero_grad()\n",
    "    loss = criterion(model(x), y)\n",
    "    loss.backward()\n",
    "    optimizer.step()\n",
    "    losses.append(loss)",
]
BAD_PY = "".join(LOOP).replace("for x", "losses = []\nfor x") + "\n"


def code(*lines, **extra):
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": list(lines), **extra}


def markdown(text):
    return {"cell_type": "markdown", "metadata": {}, "source": [text]}


def dumps(cells, metadata=PYTHON, **kwargs):
    """A notebook as Jupyter writes it: indent 1, sorted keys, UTF-8, final newline."""
    nb = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False, **kwargs) + "\n"


def write(folder, name, cells=None, text=None, **kwargs):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else dumps(cells, **kwargs), encoding="utf-8")
    return path


def check(capsys, *args):
    code_ = main(["check", "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    return code_, out, err


def findings(capsys, *args):
    code_, out, err = check(capsys, "--output-format", "json", *args)
    return code_, [(d["path"], d["cell"], d["line"], d["column"], d["code"]) for d in json.loads(out)], err


TRAINING = [
    markdown("# Training\n"),
    code("import torch\n", "losses = []"),
    markdown("Now the loop.\n"),
    code(*LOOP),
]


def test_names_flow_between_cells_and_positions_are_per_cell(project, capsys):
    write(project, "train.ipynb", TRAINING)
    code_, out, err = check(capsys, "train.ipynb")
    assert (code_, err) == (1, "")
    first = out.splitlines()[0]
    assert first.startswith("train.ipynb:cell 4:line 6:col 5: TL301 ")
    assert findings(capsys, "train.ipynb")[1] == [("train.ipynb", 4, 6, 5, "TL301")]


def test_json_record_for_a_notebook(project, capsys):
    write(project, "train.ipynb", TRAINING)
    _, out, _ = check(capsys, "--output-format", "json", "train.ipynb")
    record, = json.loads(out)
    assert (record["cell"], record["line"], record["column"], record["end_line"], record["end_column"]) == (
        4, 6, 5, 6, 24)


def test_full_format_quotes_the_cell_line(project, capsys):
    write(project, "train.ipynb", TRAINING)
    _, out, _ = check(capsys, "--output-format", "full", "train.ipynb")
    assert "6 |     losses.append(loss)\n  |     ^^^^^^^^^^^^^^^^^^^ TL301\n" in out


@pytest.mark.parametrize("magic_cell", [
    code("%matplotlib inline\n", "%load_ext autoreload\n", "!pip install torch\n", "import torch\n",
         "losses = []"),
    code("files = !ls data\n", "torch?\n", "??torch.nn\n", "%config InlineBackend.figure_format = 'retina' \\\n",
         "    # continued\n", "losses = []"),
    code("%%capture\n", "import torch\n", "losses = []"),
])
def test_ipython_syntax_is_masked_and_lines_keep_their_numbers(project, capsys, magic_cell):
    loop = code("%time x = 1\n", *LOOP[:5], "    !echo step\n", LOOP[5])
    write(project, "nb.ipynb", [magic_cell, loop])
    code_, found, err = findings(capsys, "nb.ipynb")
    assert err == "" and found == [("nb.ipynb", 2, 8, 5, "TL301")]


def test_time_cell_magic_body_is_python(project, capsys):
    write(project, "nb.ipynb", [code("losses = []"), code("%%time\n", *LOOP)])
    assert findings(capsys, "nb.ipynb")[1] == [("nb.ipynb", 2, 7, 5, "TL301")]


def test_non_python_cell_magics_are_skipped(project, capsys):
    write(project, "nb.ipynb", [
        code("%%bash\n", "for f in *.pt; do\n", "  echo $f\n", "done\n"),
        code("%%writefile train.py\n", "losses = []\n", *LOOP),
        code("x = 1"),
    ])
    code_, found, err = findings(capsys, "nb.ipynb")
    assert (code_, found, err) == (0, [], "")


def test_an_indented_shell_escape_as_the_only_statement_stays_valid(project, capsys):
    write(project, "nb.ipynb", [code("for f in files:\n", "    !gzip {f}\n"), code("losses = []\n", *LOOP)])
    assert findings(capsys, "nb.ipynb")[1] == [("nb.ipynb", 2, 7, 5, "TL301")]


def test_a_cell_that_is_python_is_never_masked():
    cell = ["x = (a\n", "     % 2)\n", "y = '''\n", "!not a shell line\n", "'''\n"]
    lines = notebook._split("".join(cell))
    assert notebook._mask(lines) == lines


def test_syntax_error_is_reported_in_its_cell(project, capsys):
    write(project, "nb.ipynb", [code("import torch\n"), markdown("x"), code("x = 1\n", "def broken(:\n")])
    code_, found, _ = findings(capsys, "nb.ipynb")
    assert code_ == 1
    assert [(cell, line, c) for _, cell, line, _, c in found] == [(3, 2, "TL001")]


def test_noqa_in_a_cell(project, capsys):
    write(project, "nb.ipynb", [code("losses = []\n", *LOOP[:5], LOOP[5] + "  # noqa: TL301")])
    assert check(capsys, "nb.ipynb")[0] == 0


def test_per_file_ignores_and_exclude_apply_to_notebooks(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.torchlint]\nexclude = ["scratch"]\nper-file-ignores = { "explore/*.ipynb" = ["TL301"] }\n'
    )
    write(project, "explore/a.ipynb", TRAINING)
    write(project, "scratch/b.ipynb", TRAINING)
    write(project, "src/c.ipynb", TRAINING)
    code_, found, _ = findings(capsys)
    assert code_ == 1 and [f[0] for f in found] == ["src/c.ipynb"]


def test_directories_are_walked_for_notebooks(project, capsys):
    write(project, "nbs/train.ipynb", TRAINING)
    write(project, "nbs/.ipynb_checkpoints/train-checkpoint.ipynb", TRAINING)
    (project / "nbs" / "train.py").write_text(BAD_PY)
    _, found, _ = findings(capsys, "nbs")
    assert sorted(f[0] for f in found) == ["nbs/train.ipynb", "nbs/train.py"]


@pytest.mark.parametrize("name, text, finding", [
    ("bad_json.ipynb", '{"cells": [', "bad_json.ipynb:1:12: TL001 not a valid notebook: invalid JSON at line 1 column 12"),
    ("empty.ipynb", "", "empty.ipynb:1:1: TL001 not a valid notebook: the file is empty"),
    ("blank.ipynb", " \n\t\n", "blank.ipynb:1:1: TL001 not a valid notebook: the file is empty"),
    ("list.ipynb", "[]", "list.ipynb:1:1: TL001 not a valid notebook: the JSON is not an object"),
    ("no_cells.ipynb", '{"metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "TL001 not a valid notebook: no 'cells' list"),
    ("bad_source.ipynb", dumps([{"cell_type": "code", "metadata": {}, "outputs": [], "source": 3}]),
     "TL001 not a valid notebook: cell 1 has a 'source' that is not text"),
    ("bad_source_part.ipynb", dumps([{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["x = 1\n", 3]}]),
     "TL001 not a valid notebook: cell 1 has a 'source' that is not text"),
])
def test_broken_notebooks_are_findings_and_the_run_goes_on(project, capsys, name, text, finding):
    write(project, name, text=text)
    (project / "bad.py").write_text(BAD_PY)
    code_, out, err = check(capsys, name, "bad.py")
    assert code_ == 1 and "Traceback" not in err
    assert "bad.py:7:5: TL301" in out and finding in out, out


@pytest.mark.parametrize("name, text, message", [
    ("v3.ipynb", '{"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {}}',
     "nbformat 3 notebooks are not supported; upgrade it with `jupyter nbconvert"),
    ("r.ipynb", dumps([code("x <- 1")], metadata={"kernelspec": {"language": "R", "name": "ir"}}),
     "notebook language is 'R', not Python; skipped"),
])
def test_notebooks_torchlint_does_not_read_are_noted_and_not_passed(project, capsys, name, text, message):
    write(project, name, text=text)
    code_, out, err = check(capsys, name)
    assert f"torchlint: {name}: " in err and message in err, err
    assert code_ == 0 and "All checks passed!" not in out and "1 path not checked" in out


def test_a_notebook_of_prose_only_has_nothing_to_check(project, capsys):
    write(project, "prose.ipynb", text=dumps([markdown("# Notes\n"), {"cell_type": "raw", "metadata": {}, "source": "x"}]))
    code_, out, err = check(capsys, "prose.ipynb")
    assert (code_, out, err) == (0, "All checks passed!\n", "")


def test_cells_may_be_one_string_and_crlf(project, capsys):
    nb = [code("losses = []\r\n"), {**code(), "source": "".join(LOOP).replace("\n", "\r\n")}]
    write(project, "nb.ipynb", nb)
    assert findings(capsys, "nb.ipynb")[1] == [("nb.ipynb", 2, 6, 5, "TL301")]


def test_notebook_on_stdin(project):
    from conftest import run_cli

    proc = run_cli("check", "--stdin-filename", "nbs/t.ipynb", "-", cwd=project, stdin=dumps(TRAINING))
    assert proc.returncode == 1 and proc.stdout.startswith("nbs/t.ipynb:cell 4:line 6:col 5: TL301")


def test_results_are_cached_with_their_cells(project, capsys):
    write(project, "train.ipynb", TRAINING)
    first = main(["check", "--output-format", "json", "train.ipynb"]), capsys.readouterr().out
    again = main(["check", "--output-format", "json", "train.ipynb"]), capsys.readouterr().out
    assert first == again and json.loads(again[1])[0]["cell"] == 4


def test_the_pre_commit_hook_runs_on_notebooks():
    from pathlib import Path

    identify = pytest.importorskip("identify.identify")
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert "types_or: [python, jupyter]" in hooks
    assert "jupyter" in identify.tags_from_filename("analysis.ipynb")


# -- writing fixes back (the fixer's hook) -----------------------------------

# -- a cell that is not Python (an exercise's blank): reported, the other cells still checked

EXERCISE = [
    code("import torch\n", "losses = []"),
    markdown("Define the model.\n"),
    code("## TODO: define the model\n", "model = \n"),
    code(*LOOP),
]


def test_a_broken_cell_is_reported_and_the_other_cells_are_still_checked(project, capsys):
    write(project, "exercise.ipynb", EXERCISE)
    code_, found, err = findings(capsys, "exercise.ipynb")
    # losses = [] of cell 1 still reaches the loop of cell 4, past the broken cell 3
    assert (code_, err) == (1, "")
    assert found == [("exercise.ipynb", 3, 2, 9, "TL001"), ("exercise.ipynb", 4, 6, 5, "TL301")]


def test_a_broken_cell_in_concise_and_json_output(project, capsys):
    write(project, "exercise.ipynb", EXERCISE)
    _, out, _ = check(capsys, "--output-format", "concise", "exercise.ipynb")
    assert out.splitlines()[:2] == [
        "exercise.ipynb:cell 3:line 2:col 9: TL001 syntax error: invalid syntax (this cell is left out; "
        "the other cells are checked without it)",
        "exercise.ipynb:cell 4:line 6:col 5: TL301 tensor that carries an autograd graph is kept across "
        "iterations, so every iteration's graph stays in memory; store loss.item() or loss.detach()",
    ]
    _, out, _ = check(capsys, "--output-format", "json", "exercise.ipynb")
    broken, loop = json.loads(out)
    assert (broken["code"], broken["cell"], broken["line"], broken["column"], broken["fix"]) == ("TL001", 3, 2, 9, None)
    assert broken["message"].startswith("syntax error: invalid syntax")
    assert (loop["code"], loop["cell"], loop["line"]) == ("TL301", 4, 6) and loop["fix"] is not None


def test_syntax_errors_in_several_cells_are_each_reported_within_their_cell(project, capsys):
    write(project, "nb.ipynb", [
        code("    x = (\n"),  # indented: dedented first, as IPython does; the column is the cell's
        code("losses = []"),
        code("def train():\n", "    pass\n", "def evaluate():\n"),
        code(*LOOP),
    ])
    code_, found, _ = findings(capsys, "nb.ipynb")
    assert found == [("nb.ipynb", 1, 1, 9, "TL001"), ("nb.ipynb", 3, 3, 16, "TL001"),
                     ("nb.ipynb", 4, 6, 5, "TL301")]
    _, out, _ = check(capsys, "nb.ipynb")
    assert "expected an indented block after function definition on line 3" in out  # the cell's line


def test_a_notebook_whose_every_cell_is_broken_has_only_syntax_errors(project, capsys):
    write(project, "nb.ipynb", [code("x = \n"), markdown("x"), code("for x in y:\n")])
    assert findings(capsys, "nb.ipynb")[1] == [("nb.ipynb", 1, 1, 5, "TL001"), ("nb.ipynb", 3, 1, 12, "TL001")]


def test_fix_writes_the_cells_that_parse_and_never_a_broken_cell(project, capsys):
    path = write(project, "exercise.ipynb", EXERCISE)
    before = path.read_bytes()
    code_, out, err = check(capsys, "--fix", "--unsafe-fixes", path)
    after = path.read_bytes()
    assert after == before.replace(b'"    losses.append(loss)"', b'"    losses.append(loss.detach())"')
    assert json.loads(after)["cells"][2]["source"] == ["## TODO: define the model\n", "model = \n"]
    # the syntax error stays, as the finding that remains: the exit code says so
    assert code_ == 1 and "cell 3:line 2:col 9: TL001" in out and "1 fixed" in out, (out, err)
    assert [f[4] for f in findings(capsys, path)[1]] == ["TL001"]


def test_rewrite_hands_the_fixer_the_module_without_the_broken_cell():
    data = dumps(EXERCISE).encode()
    seen = []
    new = notebook.rewrite(data, lambda src: seen.append(src) or _store_item(src))
    assert "model = " not in seen[0] and "torchlint cell 3 " not in seen[0] and "torchlint cell 4 " in seen[0]
    assert new == data.replace(b'"    losses.append(loss)"', b'"    losses.append(loss.item())"')
    assert notebook.rewrite(dumps([code("x = \n")]).encode(), lambda src: src + "y = 1\n") is None


def _store_item(source):
    return source.replace("losses.append(loss)", "losses.append(loss.item())")


def test_rewrite_changes_only_the_fixed_cell_byte_for_byte():
    cells = [markdown("# Ünïcode stays\n"), code("%matplotlib inline\n", "losses = []"),
             code("!nvidia-smi\n", *LOOP, execution_count=7,
                  outputs=[{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}])]
    data = dumps(cells).encode()
    new = notebook.rewrite(data, _store_item)
    assert new == data.replace(b'"    losses.append(loss)"', b'"    losses.append(loss.item())"')
    json.loads(new)  # still valid


def test_rewrite_keeps_other_layouts():
    cells = [code(*LOOP), code("x = 1\n")]
    nb = {"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": cells}
    for text in (json.dumps(nb, indent=2), json.dumps(nb), json.dumps(nb, indent=4, ensure_ascii=True) + "\n"):
        data = text.encode()
        new = notebook.rewrite(data, _store_item)
        assert new == data.replace(b'"    losses.append(loss)"', b'"    losses.append(loss.item())"'), text
    single = {**nb, "cells": [{**code(), "source": "".join(LOOP)}]}
    data = json.dumps(single, indent=1).encode()
    assert json.loads(notebook.rewrite(data, _store_item))["cells"][0]["source"] == _store_item("".join(LOOP))


def test_rewrite_puts_an_added_import_in_the_first_code_cell():
    data = dumps([markdown("x"), code("losses = []"), code(*LOOP)]).encode()
    new = notebook.rewrite(data, lambda src: "import torch\n" + src)
    assert json.loads(new)["cells"][1]["source"] == ["import torch\n", "losses = []"]
    assert json.loads(new)["cells"][2]["source"] == LOOP


def test_rewrite_puts_magics_back_around_changed_lines():
    data = dumps([code("losses = []\n", *LOOP[:5], "    !echo hi\n", "    %time 1\n", LOOP[5])]).encode()
    new = notebook.rewrite(data, lambda src: src.replace("losses.append(loss)",
                                                         "value = loss.item()\n    losses.append(value)"))
    source = "".join(json.loads(new)["cells"][0]["source"])
    assert "    !echo hi\n    %time 1\n    value = loss.item()\n    losses.append(value)" in source


def test_rewrite_refuses_what_it_cannot_map_back():
    data = dumps([code("losses = []\n", "!ls"), code(*LOOP)]).encode()
    assert notebook.rewrite(data, lambda src: src) is None
    with pytest.raises(notebook.NotebookError, match="cell boundary"):
        notebook.rewrite(data, lambda src: "\n".join(x for x in src.splitlines() if "torchlint cell 2" not in x))
    with pytest.raises(notebook.NotebookError, match="IPython line in cell 1"):
        notebook.rewrite(data, lambda src: src.replace("losses = []\n\n", "losses = []\nx = 1\n"))


def test_fix_rewrites_only_the_fixed_cell_and_the_notebook_then_checks_clean(project, capsys):
    cells = [markdown("# Ünïcode stays\n"), code("import torch\n", "%matplotlib inline\n", "losses = []"),
             code(*LOOP, execution_count=3, outputs=[{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}])]
    path = write(project, "train.ipynb", cells)
    before = path.read_bytes()
    code_, _, err = check(capsys, "--fix", "--unsafe-fixes", path)
    assert code_ == 0, err
    after = path.read_bytes()
    assert after == before.replace(b'"    losses.append(loss)"', b'"    losses.append(loss.detach())"')
    assert json.loads(after)["cells"][2]["outputs"][0]["text"] == ["ok\n"]
    assert findings(capsys, path)[1] == []
    assert check(capsys, "--fix", "--unsafe-fixes", path)[0] == 0 and path.read_bytes() == after


def test_diff_on_a_notebook_writes_nothing(project, capsys):
    path = write(project, "train.ipynb", [code("import torch\n", "losses = []"), code(*LOOP)])
    before = path.read_bytes()
    code_, out, _ = check(capsys, "--diff", "--unsafe-fixes", path)
    assert code_ == 1 and "+    \"    losses.append(loss.detach())\"" in out
    assert path.read_bytes() == before


# -- cells as IPython reads them (issue 16, item 12) ----------------------------

def test_percent_inside_open_brackets_is_python_not_a_magic(project, capsys):
    """``%(x)`` continuing a string format inside parentheses: IPython runs it as Python."""
    cell = code("%matplotlib inline\n", "losses = []\n", *LOOP[:-1],
                "    label = ('step %s'\n", "%(x))\n", LOOP[-1])
    write(project, "nb.ipynb", [cell])
    code_, found, err = findings(capsys, "nb.ipynb")
    assert found == [("nb.ipynb", 1, 10, 5, "TL301")] and "TL001" not in err


@pytest.mark.parametrize("inside", [
    ["    x = f(a,\n", "!important\n", "    )\n"],  # inside brackets: an operator, not a shell escape
    ["doc = '''\n", "%s percent\n", "'''\n"],  # inside a triple-quoted string
])
def test_no_magic_is_seen_inside_an_open_statement(inside):
    from torchlint.notebook import _mask

    lines = ["%matplotlib inline", *[line.rstrip("\n") for line in inside]]
    masked = _mask(lines)
    assert masked[0] == "" and masked[1:] == lines[1:]


def test_a_magic_at_a_statement_start_is_still_masked():
    from torchlint.notebook import _mask

    assert _mask(["x = (1,", "     2)", "!pip install torch", "y = x"]) == ["x = (1,", "     2)", "", "y = x"]


INDENTED = ["    import torch\n", "    losses = []\n", "    for x, y in loader:\n",
            "        loss = criterion(model(x), y)\n", "        loss.backward()\n",
            "        optimizer.step()\n", "        optimizer.zero_grad()\n", "        losses.append(loss)\n"]


def test_a_cell_indented_as_a_block_is_dedented_as_ipython_does(project, capsys):
    write(project, "nb.ipynb", [code(*INDENTED)])
    code_, found, err = findings(capsys, "nb.ipynb")
    # the column is the one in the cell as written
    assert found == [("nb.ipynb", 1, 8, 9, "TL301")] and "TL001" not in err


def test_fixing_an_indented_cell_keeps_its_indentation(project, capsys):
    write(project, "nb.ipynb", [code(*INDENTED)])
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", str(project / "nb.ipynb")])
    capsys.readouterr()
    source = "".join(json.loads((project / "nb.ipynb").read_text())["cells"][0]["source"])
    assert source == "".join(INDENTED).replace("losses.append(loss)", "losses.append(loss.detach())")


@pytest.mark.parametrize("line", ["torch.*Tensor?", "?torch.*Tensor", "torch.nn.*Loss*?", "np.*load*??",
                                  "data.iloc[0]?", "?", "torch.nn.Linear??"])
def test_help_and_wildcard_searches_are_masked(line):
    """Seen in real notebooks (``torch.*Tensor?`` in a tensor tutorial gave a false TL001)."""
    from torchlint.notebook import _mask

    assert _mask(["import torch", line, "x = 1"]) == ["import torch", "", "x = 1"]
