"""Output formats for CI and tools: sarif (schema-valid), github, json, concise, full, gitlab."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import STORED_LOSS
from torchlint.cli import main
from torchlint.diagnostic import Applicability, Diagnostic
from torchlint.reporters import FORMATS

SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
STORED = STORED_LOSS.format(suffix="")


def write(folder, name, text):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(capsys, *args):
    code = main(["check", "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def render(fmt, diagnostics, **context):
    out = io.StringIO()
    FORMATS[fmt](diagnostics, out, **context)
    return out.getvalue()


# -- sarif -------------------------------------------------------------------

def _validate(document):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(document)


def test_sarif_is_valid_and_complete(project, capsys):
    write(project, "pkg/train.py", STORED)
    write(project, "my dir/broken.py", "for x in loader:\n    y = f(\n")
    code, out, _ = run(capsys, "--output-format", "sarif", project / "pkg" / "train.py", "my dir/broken.py")
    assert code == 1
    sarif = json.loads(out)
    _validate(sarif)
    assert sarif["version"] == "2.1.0"
    run_ = sarif["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "torchlint" and driver["version"]
    assert driver["informationUri"].startswith("https://")
    rules = {rule["id"]: rule for rule in driver["rules"]}
    tl301 = rules["TL301"]
    assert tl301["name"] == "graph-kept-across-iterations"
    assert tl301["shortDescription"]["text"]
    assert tl301["helpUri"].endswith("/docs/rules/TL301.md")
    assert tl301["defaultConfiguration"]["level"] == "error"
    assert "TL001" in rules  # a syntax error has a rule entry too

    by_rule = {r["ruleId"]: r for r in run_["results"]}
    result = by_rule["TL301"]
    assert driver["rules"][result["ruleIndex"]]["id"] == "TL301"
    assert result["level"] == "error" and result["message"]["text"].startswith("tensor that carries")
    location = result["locations"][0]["physicalLocation"]
    # an absolute path under the working directory becomes relative, with forward slashes
    assert location["artifactLocation"] == {"uri": "pkg/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 10, "startColumn": 9, "endLine": 10, "endColumn": 28}
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
    broken = by_rule["TL001"]["locations"][0]["physicalLocation"]
    assert broken["artifactLocation"]["uri"] == "my%20dir/broken.py"
    assert "endLine" not in broken["region"]


def test_sarif_without_findings_is_valid(project, capsys):
    write(project, "clean.py", "import torch\n")
    code, out, _ = run(capsys, "--output-format", "sarif", "clean.py")
    sarif = json.loads(out)
    _validate(sarif)
    assert code == 0 and sarif["runs"][0]["results"] == []


def test_sarif_notebook_and_fix_properties_are_valid():
    d = Diagnostic("nb.ipynb", 2, 5, "TL301", "msg", 2, 9, cell=3)
    sarif = json.loads(render("sarif", [d]))
    _validate(sarif)
    result = sarif["runs"][0]["results"][0]
    assert result["properties"] == {"cell": 3}
    assert result["message"]["text"] == "cell 3, line 2: msg"


# -- github ------------------------------------------------------------------

def test_github_annotations(project, capsys):
    write(project, "pkg/train.py", STORED)
    code, out, _ = run(capsys, "--output-format", "github", "pkg/train.py")
    assert code == 1
    line, = out.splitlines()
    assert line.startswith("::error file=pkg/train.py,line=10,col=9,endLine=10,endColumn=28,title=TL301::TL301 ")
    assert "loss.item()" in line


def test_github_escapes_properties_and_data():
    d = Diagnostic("a,b:c.py", 1, 1, "TL301", "50% of\nmemory")
    assert render("github", [d]) == (
        "::error file=a%2Cb%3Ac.py,line=1,col=1,title=TL301::TL301 50%25 of%0Amemory\n"
    )


# -- json --------------------------------------------------------------------

JSON_FIELDS = {"path", "line", "column", "end_line", "end_column", "code", "name", "message", "fix", "cell"}


def test_json_fields_are_stable(project, capsys):
    write(project, "bad.py", STORED)
    code, out, _ = run(capsys, "--output-format", "json", "bad.py")
    record, = json.loads(out)
    assert set(record) == JSON_FIELDS
    assert record["fix"] == {"safety": "unsafe", "description": "store `loss.detach()` instead of `loss`"}
    assert record["cell"] is None
    assert (record["path"], record["line"], record["column"], record["code"]) == ("bad.py", 10, 9, "TL301")


@pytest.mark.parametrize("fix, description, expected", [
    (None, None, None),
    (Applicability.UNSAFE, "store loss.item()", {"safety": "unsafe", "description": "store loss.item()"}),
    (Applicability.SAFE, None, {"safety": "safe"}),
    ("safe", None, {"safety": "safe"}),  # as read back from the result cache
])
def test_json_fix_field(fix, description, expected):
    d = Diagnostic("a.py", 1, 1, "TL301", "m", fix=fix, fix_description=description)
    assert json.loads(render("json", [d]))[0]["fix"] == expected


# -- concise, full, text -----------------------------------------------------

def test_concise_is_one_line_per_finding(project, capsys):
    write(project, "bad.py", STORED)
    write(project, "clean.py", "import torch\n")
    code, out, _ = run(capsys, "--output-format", "concise", "bad.py")
    assert code == 1 and out.splitlines() == [out.splitlines()[0]]
    assert out.startswith("bad.py:10:9: TL301 ")
    assert run(capsys, "--output-format", "concise", "clean.py")[1] == ""


def test_full_shows_the_line_and_a_caret(project, capsys):
    write(project, "bad.py", STORED)
    code, out, _ = run(capsys, "--output-format", "full", "bad.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("bad.py:10:9: TL301 ")
    assert lines[1:5] == [
        "   |",
        "10 |         losses.append(loss)",
        "   |         ^^^^^^^^^^^^^^^^^^^ TL301",
        "   |",
    ]
    assert lines[-1] == "Found 1 finding in 1 file."


def test_full_expands_tabs_and_survives_a_missing_file():
    src = {"t.py": "if x:\n\tlosses.append(loss)\n"}
    d = Diagnostic("t.py", 2, 2, "TL301", "m", 2, 21)
    out = render("full", [d], sources=src)
    assert "2 |     losses.append(loss)\n  |     ^^^^^^^^^^^^^^^^^^^ TL301\n" in out
    gone = render("full", [Diagnostic("gone.py", 3, 1, "TL301", "m")])
    assert gone.startswith("gone.py:3:1: TL301 m\n\nFound 1 finding")


def test_text_is_unchanged(project, capsys):
    write(project, "bad.py", STORED)
    _, out, _ = run(capsys, "bad.py")
    assert out.splitlines()[-1] == "Found 1 finding in 1 file."


# -- gitlab ------------------------------------------------------------------

def test_gitlab_code_quality_report(project, capsys):
    write(project, "src/bad.py", STORED)
    _, out, _ = run(capsys, "--output-format", "gitlab", "src/bad.py")
    record, = json.loads(out)
    assert record["check_name"] == "TL301" and record["severity"] == "major"
    assert record["location"] == {"path": "src/bad.py", "lines": {"begin": 10, "end": 10}}
    assert record["description"].startswith("TL301 tensor")
    # lines added above the finding do not change its fingerprint
    write(project, "src/bad.py", "# a comment\n\n" + STORED)
    moved, = json.loads(run(capsys, "--output-format", "gitlab", "src/bad.py")[1])
    assert moved["location"]["lines"]["begin"] == 12
    assert moved["fingerprint"] == record["fingerprint"]


def test_gitlab_identical_lines_get_distinct_fingerprints():
    src = {"a.py": "x\nx\n"}
    records = json.loads(render("gitlab", [Diagnostic("a.py", 1, 1, "TL301", "m"),
                                           Diagnostic("a.py", 2, 1, "TL301", "m")], sources=src))
    assert records[0]["fingerprint"] != records[1]["fingerprint"]


# -- the command line --------------------------------------------------------

def test_unknown_format_is_a_usage_error(project, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--output-format", "xml", "."])
    assert exc.value.code == 2
    assert "invalid choice: 'xml'" in capsys.readouterr().err


def test_formats_are_imported_only_when_chosen(project):
    write(project, "bad.py", STORED)
    probe = (
        "import sys\n"
        "from torchlint.cli import main\n"
        "main(['check', '--no-cache', '--output-format', 'text', 'bad.py'])\n"
        "heavy = ('pygls', 'lsprotocol', 'jsonschema', 'torch', 'torchlint.server', 'torchlint.notebook',\n"
        "         'torchlint.reporters.sarif', 'torchlint.reporters.full', 'torchlint.reporters.gitlab')\n"
        "sys.stderr.write(repr(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=project)
    assert proc.stderr.strip() == "[]", proc.stderr
