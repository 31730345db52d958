"""bench/compare.py keeps working without the network: torchlint alone on three small files.

The end-to-end test runs the script as users do, with ``--tools torchlint`` (no peer to install),
and checks the JSON that docs/comparison.md is generated from. The others feed the script's
readers the shapes of output the peers print, and a peer that cannot be set up, in-process.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT, STORED_LOSS

SCRIPT = ROOT / "bench" / "compare.py"


def _load():
    saved = list(sys.path)
    try:  # the script puts bench/ first on sys.path to import its neighbours; keep that out of the tests
        spec = importlib.util.spec_from_file_location("_torchlint_compare", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


compare = _load()


def _notebook(source: str) -> str:
    return compare.probe_notebook(source)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    work = tmp_path_factory.mktemp("compare")
    (work / "train.py").write_text(STORED_LOSS.format(suffix=""))
    (work / "clean.py").write_text("import torch\n\nx = torch.zeros(3)\n")
    (work / "nb.ipynb").write_text(_notebook(STORED_LOSS.format(suffix="")))
    out = work / "out.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tools", "torchlint", "--repeat", "2",
                           "--cache", str(work / "cache"),
                           "--json", str(out), "--files", str(work / "train.py"), str(work / "clean.py"),
                           str(work / "nb.ipynb")], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_the_report_says_what_ran_where(report):
    assert report["schema"] == compare.SCHEMA and report["repeat"] == 2
    assert report["command"].startswith("python bench/compare.py --tools torchlint ")
    assert report["corpus"]["files"] == {"py": 2, "ipynb": 1}
    assert {"cpu", "cores", "python"} <= set(report["machine"])
    assert report["torchlint"]["version"] and list(report["tools"]) == ["torchlint"]


def test_torchlint_runs_the_py_files_and_the_notebooks_apart(report):
    tool = report["tools"]["torchlint"]
    assert tool["status"] == "ran" and tool["python"] == "%d.%d" % sys.version_info[:2]
    py, notebooks = tool["runs"]["py"], tool["runs"]["ipynb"]
    assert (py["files_given"], notebooks["files_given"]) == (2, 1)
    for run in (py, notebooks):  # the stored loss of STORED_LOSS, once per file
        assert run["by_code"] == {"TL301": 1} and run["findings"] == 1 and run["files_with_findings"] == 1
        assert run["parse_errors"] == 0 and run["exit_code"] == 1
        # two runs each, the fastest one's time shown, the same findings both times
        assert len(run["wall_s_each"]) == 2 and run["wall_s"] == min(run["wall_s_each"]) > 0
        assert run["same_findings_every_run"]
        assert run["command"][:4] == ["python", "-m", "torchlint", "check"] and run["command"][-1] == "FILES"
        assert "--isolated" in run["command"]


def test_the_probes_measure_what_torchlint_offers(report):
    features = report["tools"]["torchlint"]["features"]
    notebooks = features["notebooks"]
    assert notebooks["reads_notebooks"] and notebooks["same_line_and_code"] == notebooks["py_findings"] > 0
    assert features["fix"]["fix_option"] and features["fix"]["rewrote"] and features["fix"]["parses_after"]
    assert features["flake8_plugin"]["entry_points"] == ["TL"]
    server = features["language_server"]
    assert server["command"] == "server"
    if importlib.util.find_spec("pygls") is not None:  # torchlint[lsp]
        assert server["answers_initialize"] and server["server"] == "torchlint"


class _Broken(compare.Tool):
    key = "broken"
    label = "a peer that cannot be installed"

    def setup(self, venvs):
        return "pip install failed on Python 3.11: no matching distribution"


def test_a_peer_that_cannot_be_set_up_is_recorded_and_the_rest_go_on(tmp_path):
    (tmp_path / "a.py").write_text(STORED_LOSS.format(suffix=""))
    result = compare.compare([_Broken(), compare.Torchlint()], ["a.py"], tmp_path, tmp_path / "work",
                             tmp_path / "venvs", timeout=120)
    broken, torchlint = result["tools"]["broken"], result["tools"]["torchlint"]
    assert broken["status"] == "not run" and broken["why"].startswith("pip install failed")
    assert "runs" not in broken and "features" not in broken
    assert torchlint["status"] == "ran" and torchlint["runs"]["py"]["by_code"] == {"TL301": 1}


def test_torchfix_output_is_read_with_its_diffs_and_failures(tmp_path):
    stdout = ("a.py:3:5: TOR102 [*] `torch.load` without `weights_only` parameter is unsafe.\n"
              "--- a.py\n+++ a.py\n@@ -3 +3 @@\n-x = torch.load(p)\n+x = torch.load(p, weights_only=True)\n"
              "sub/b.py:1:1: TOR203 [*] Consider replacing 'import torchvision.models as models'.\n")
    stderr = "Codemodding c.py\nFailed to codemod c.py\nFinished checking 3 files.\n"
    parsed = compare.TorchFix().parse(stdout, stderr, tmp_path)
    assert [(f.path, f.line, f.code) for f in parsed.findings] == [("a.py", 3, "TOR102"), ("sub/b.py", 1, "TOR203")]
    assert [f.path for f in parsed.parse_errors] == ["c.py"] and parsed.reported_checked == 3
    with pytest.raises(compare.ToolFailed):  # a run that died before its summary
        compare.TorchFix().parse("", "Traceback (most recent call last):\nKeyError: 'x'\n", tmp_path)


def test_json_outputs_of_the_peers_are_read_with_their_parse_errors(tmp_path):
    preflight = {"summary": {"files_checked": 2}, "failures": [{"path": "bad.py", "error": "syntax error"}],
                 "diagnostics": [{"code": "TG001", "path": "a.py", "line": 7}]}
    parsed = compare.TorchPreflight().parse(json.dumps(preflight), "", tmp_path)
    assert [(f.code, f.line) for f in parsed.findings] == [("TG001", 7)] and parsed.reported_checked == 2
    assert [f.path for f in parsed.parse_errors] == ["bad.py"]
    ruff = [{"code": "F401", "filename": str(tmp_path / "a.py"), "location": {"row": 1}, "cell": None},
            {"code": "invalid-syntax", "filename": str(tmp_path / "b.py"), "location": {"row": 2}, "cell": None},
            {"code": "E501", "filename": str(tmp_path / "nb.ipynb"), "location": {"row": 4}, "cell": 3}]
    parsed = compare.Ruff().parse(json.dumps(ruff), "", tmp_path)
    found = [(f.path, f.cell, f.line, f.code) for f in parsed.findings]
    assert found == [("a.py", None, 1, "F401"), ("nb.ipynb", 3, 4, "E501")]
    assert [f.path for f in parsed.parse_errors] == ["b.py"]
    pylint = [{"message-id": "W0611", "path": "a.py", "line": 1}, {"message-id": "E0001", "path": "b.py", "line": 2}]
    parsed = compare.Pylint().parse(json.dumps(pylint), "", tmp_path)
    assert [f.code for f in parsed.findings] == ["W0611"] and [f.code for f in parsed.parse_errors] == ["E0001"]


def test_overlaps_pair_answering_codes_on_the_same_line_only():
    F = compare.Finding
    peer = [F("a.py", None, 3, "TOR102"), F("a.py", None, 3, "TOR102"),  # one line reported twice
            F("a.py", None, 9, "TOR102"), F("a.py", None, 4, "TOR203")]
    torchlint = [F("a.py", None, 3, "TL507"), F("a.py", None, 9, "TL301"), F("nb.ipynb", 2, 1, "TL507")]
    found = compare.overlaps(peer, torchlint, compare.TORCHFIX_ANSWERS, {"a.py"})
    assert found["peer_codes"]["TOR102"] == {"answered_by": ["TL507"], "lines": 2, "lines_with_partner": 1}
    assert found["peer_codes"]["TOR203"] == {"answered_by": [], "lines": 1, "lines_with_partner": 0}
    # the notebook's TL507 is left out: TorchFix never checked that file
    assert found["torchlint_codes"] == {"TL507": {"answers": ["TOR102"], "lines": 1, "lines_with_partner": 1}}


def test_the_notebook_probe_tells_a_cell_reader_from_a_json_reader(tmp_path):
    class JsonAsPython(compare.Torchlint):
        """A stand-in for pylint: reads the notebook file's own lines, never its cells."""

        def parse(self, stdout, stderr, cwd):
            parsed = super().parse(stdout, stderr, cwd)
            return compare.Parsed([f for f in parsed.findings if f.cell is None], parsed.parse_errors)

    probe = compare.notebook_probe(JsonAsPython(), tmp_path)  # torchlint itself: the end-to-end test above
    assert probe["py_findings"] > 0 and probe["notebook_findings"] == 0 and not probe["reads_notebooks"]
