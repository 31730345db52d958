"""The ``torchlint`` command: exit codes, selection, formats, config, noqa, bad input."""
from __future__ import annotations

import json
import shlex
import sys

import pytest

from conftest import FIXTURES, STORED_LOSS, run_cli
from torchlint import __version__
from torchlint.cli import main

STORED = STORED_LOSS
CLEAN = "import torch\n\nx = torch.zeros(3)\n"


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def check(*args, capsys):
    code = main(["check", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"torchlint {__version__}"


def test_exit_codes_and_text_format(project, capsys):
    write(project, "clean.py", CLEAN)
    assert check("clean.py", capsys=capsys)[:2] == (0, "All checks passed!\n")
    write(project, "bad.py", STORED.format(suffix=""))
    code, out, _ = check("bad.py", capsys=capsys)
    assert code == 1
    assert out.splitlines()[0].startswith("bad.py:10:9: TL301 tensor that carries an autograd graph")
    assert out.splitlines()[-1] == "Found 1 finding in 1 file."
    assert check("--exit-zero", "bad.py", capsys=capsys)[0] == 0


def test_default_path_is_the_current_directory(project, capsys):
    write(project, "pkg/train.py", STORED.format(suffix=""))
    write(project, ".venv/lib/site.py", STORED.format(suffix=""))
    write(project, "build/lib/train.py", STORED.format(suffix=""))
    code, out, _ = check(capsys=capsys)
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()[:-1]] == ["pkg/train.py"]


def test_json_format(project, capsys):
    write(project, "bad.py", STORED.format(suffix=""))
    code = main(["check", "--output-format", "json", "bad.py"])
    records = json.loads(capsys.readouterr().out)
    assert code == 1
    assert records == [{
        "path": "bad.py", "line": 10, "column": 9, "end_line": 10, "end_column": 28,
        "code": "TL301", "name": "graph-kept-across-iterations",
        "message": records[0]["message"], "fix": records[0]["fix"], "cell": None,
    }]


@pytest.mark.parametrize("args, expected", [
    (["--select", "TL1,TL2"], 0),
    (["--select", "TL301"], 1),
    (["--ignore", "TL3"], 0),
    (["--select", "ALL", "--ignore", "TL301"], 0),
])
def test_select_and_ignore(project, capsys, args, expected):
    write(project, "bad.py", STORED.format(suffix=""))
    assert check(*args, "bad.py", capsys=capsys)[0] == expected


@pytest.mark.parametrize("comment, expected", [
    ("  # noqa", 0), ("  # noqa: TL301", 0), ("  # NOQA:TL301,TL101", 0), ("  # noqa: TL101", 1),
])
def test_noqa(project, capsys, comment, expected):
    write(project, "bad.py", STORED.format(suffix=comment))
    assert check("bad.py", capsys=capsys)[0] == expected


def test_unknown_code_on_command_line_is_a_usage_error(project, capsys):
    code, _, err = check("--select", "TL999", ".", capsys=capsys)
    assert code == 2 and "unknown rule code 'TL999'" in err


def test_missing_path(project, capsys):
    write(project, "clean.py", CLEAN)
    code, out, err = check("clean.py", "nope.py", capsys=capsys)
    assert code == 2 and "nope.py: no such file or directory" in err
    # the other file was still checked, but not everything named was
    assert out == "No findings in the files checked.\n1 path not checked (see the notes above).\n"


def test_config_select_ignore_and_per_file_ignores(project, capsys):
    write(project, "pyproject.toml", """
[tool.torchlint]
ignore = ["TL101"]
per-file-ignores = { "scripts/*" = ["TL301"] }
exclude = ["generated"]
""")
    write(project, "scripts/run.py", STORED.format(suffix=""))
    write(project, "generated/out.py", STORED.format(suffix=""))
    write(project, "src/train.py", STORED.format(suffix=""))
    code, out, _ = check(capsys=capsys)
    assert code == 1
    assert [line.split(":")[0] for line in out.splitlines()[:-1]] == ["src/train.py"]


def test_config_is_found_from_a_subdirectory(project, capsys, monkeypatch):
    write(project, "pyproject.toml", '[tool.torchlint]\nignore = ["TL301"]\n')
    write(project, "sub/bad.py", STORED.format(suffix=""))
    monkeypatch.chdir(project / "sub")
    assert check("bad.py", capsys=capsys)[0] == 0


@pytest.mark.parametrize("toml, message", [
    ('[tool.torchlint]\nselect = ["TL999"]\n', "[tool.torchlint] select: unknown rule code 'TL999'"),
    ('[tool.torchlint]\nextend_select = ["TL301"]\n', "unknown option 'extend_select' in [tool.torchlint]; did you mean 'extend-select'?"),
    ('[tool.torchlint]\ncolour = true\n', "unknown option 'colour'"),
    ('[tool.torchlint]\nignore = "TL301"\n', "[tool.torchlint] ignore: expected a list of strings"),
    ('[tool.torchlint\nignore = []\n', "invalid TOML"),
    ('[tool.torchlint]\nselect = ["TL301"]\nignore = ["TL301"]\n', "both name TL301"),
    ('[tool.torchlint]\nper-file-ignores = { "a.py" = ["XX1"] }\n', "unknown rule code 'XX1'"),
])
def test_config_errors_name_the_file_and_key(project, capsys, toml, message):
    write(project, "pyproject.toml", toml)
    write(project, "clean.py", CLEAN)
    code, _, err = check("clean.py", capsys=capsys)
    assert code == 2
    assert "pyproject.toml" in err and message in err
    assert "Traceback" not in err


def test_rule_command():
    proc = run_cli("rule", "TL301")
    assert proc.returncode == 0
    assert proc.stdout.startswith("# TL301: graph-kept-across-iterations")
    for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
        assert section in proc.stdout
    every = run_cli("rule", "--all")
    assert every.returncode == 0
    from torchlint.rules import ALL_RULES
    for rule in ALL_RULES:
        status = "on by default" if rule.default else "opt-in"
        assert f"# {rule.code}: {rule.name}\n\n**Status:** {status}" in every.stdout
    unknown = run_cli("rule", "TL999")
    assert unknown.returncode == 2 and "unknown rule code" in unknown.stderr


def test_no_command_prints_help():
    proc = run_cli()
    assert proc.returncode == 2 and "check" in proc.stdout


def test_shipped_fixtures_are_found_from_the_repo_root():
    proc = run_cli("check", "--exit-zero", FIXTURES)
    assert proc.returncode == 0
    assert "TL101" in proc.stdout and "TL401" in proc.stdout


# -- bad input ---------------------------------------------------------------

@pytest.mark.parametrize("name, data", [
    ("empty.py", b""),
    ("blank.py", b"\n\n   \n"),
    ("bom.py", b"\xef\xbb\xbfimport torch\nx = torch.zeros(1)\n"),
    ("latin1.py", b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\nfor batch in loader:\n    pass\n"),
    ("crlf.py", b"import torch\r\nfor x in loader:\r\n    y = x\r\n"),
])
def test_odd_but_valid_files_are_clean(project, capsys, name, data):
    (project / name).write_bytes(data)
    code, out, err = check(name, capsys=capsys)
    assert (code, err) == (0, "")


def test_bom_file_positions_are_right(project, capsys):
    (project / "bom.py").write_bytes(b"\xef\xbb\xbf" + STORED.format(suffix="").encode())
    code, out, _ = check("bom.py", capsys=capsys)
    assert code == 1 and out.startswith("bom.py:10:9: TL301")


def test_non_utf8_without_declaration_is_reported_not_raised(project, capsys):
    (project / "bad_bytes.py").write_bytes(b"x = '\xff\xfe'\nfor batch in loader:\n    x += 1\n")
    write(project, "bad.py", STORED.format(suffix=""))
    code, out, err = check("bad_bytes.py", "bad.py", capsys=capsys)
    assert code == 1 and "Traceback" not in err
    assert "bad_bytes.py:1:1: TL001 cannot decode file" in out
    assert "bad.py:10:9: TL301" in out


def test_syntax_error_is_reported_and_other_files_still_checked(project, capsys):
    write(project, "broken.py", "import torch\nfor batch in loader:\n    loss.backward(\n")
    write(project, "bad.py", STORED.format(suffix=""))
    code, out, err = check("broken.py", "bad.py", capsys=capsys)
    assert code == 1 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("broken.py:") and " TL001 syntax error" in lines[0]
    assert lines[1].startswith("bad.py:10:9: TL301")


def test_unreadable_file_is_reported_and_others_still_checked(project, capsys, monkeypatch):
    write(project, "secret.py", STORED.format(suffix=""))
    write(project, "bad.py", STORED.format(suffix=""))
    real_open = open

    def guarded(path, *args, **kwargs):  # chmod 0 means nothing to root, so deny here
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded)
    code, out, err = check("secret.py", "bad.py", capsys=capsys)
    # like flake8's E902: a file that cannot be read is a finding, not a quiet pass
    assert code == 1 and "bad.py:10:9: TL301" in out
    assert "secret.py:1:1: TL001 cannot read file: Permission denied" in out


# -- a reader that stops first ------------------------------------------------------

def _check_into_a_closed_pipe(folder, *args):
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: EPIPE every time
    try:
        return subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", *args], cwd=folder,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [[], ["--exit-zero"], ["--output-format", "json"], ["--statistics"],
                                  ["--diff", "--unsafe-fixes"]])
def test_a_reader_that_stops_first_is_never_a_clean_exit(tmp_path, args):
    """``torchlint check | head -1`` exited 0 with findings: a broken pipe was taken for a
    clean run. It is now 141, as for a command killed by SIGPIPE (docs/cli.md)."""
    write(tmp_path, "train.py", STORED.format(suffix=""))
    proc = _check_into_a_closed_pipe(tmp_path, *args, "train.py")
    assert (proc.returncode, proc.stderr) == (141, "")


def test_head_of_a_long_report_under_pipefail_fails(tmp_path):
    import shutil
    import subprocess

    if shutil.which("bash") is None or shutil.which("head") is None:
        pytest.skip("needs bash and head")
    # 2,000 findings (~350 KB of report): far more than a pipe holds, so head -1 has
    # exited while torchlint is still writing.
    stores = "".join(f"        kept{i}.append(loss)\n" for i in range(2000))
    write(tmp_path, "train.py", STORED.format(suffix="").replace("        losses.append(loss)\n", stores))
    # This interpreter's torchlint, whether or not its virtualenv's bin/ is on PATH.
    command = f"{shlex.quote(sys.executable)} -m torchlint check --no-cache train.py | head -1"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.stdout.startswith("train.py:") and proc.stdout.count("\n") == 1
    assert (proc.returncode, proc.stderr) == (141, "")
