"""bench/scale.py, the hazards at the scale users run, kept working at toy sizes (CPU, a few seconds).

The figures it is for come from a GPU (docs/evidence/scale/); here only the script's shape is checked,
and the one effect a CPU shows without timing: kept evaluation outputs hold their graphs in host memory.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from torchlint import measured

pytest.importorskip("torch")

spec = importlib.util.spec_from_file_location("_torchlint_scale_bench", ROOT / "bench" / "scale.py")
scale = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scale)

TOY = ["--device", "cpu", "--model", "resnet18", "--batch", "2", "--image", "64", "--steps", "3",
       "--kept-steps", "4", "--anomaly-steps", "2"]


@pytest.fixture(scope="module")
def toy_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale")
    out = root / measured.SCALE_DIR / "toy.json"
    # A process of its own: host memory growth is read off the process's resident size, which
    # pages that earlier tests freed in this one may absorb (it once read 0 in the full suite)
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "scale.py"), *TOY, "--json", str(out)],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return root, json.loads(out.read_text(encoding="utf-8"))


def test_every_scenario_runs_its_hazard_beside_its_fix(toy_report):
    _, report = toy_report
    assert list(report["scenarios"]) == list(scale.SCENARIOS)
    assert report["device"] == "cpu" and report["batch"] == 2 and report["image"] == "3x64x64"
    assert report["command"].startswith("python bench/scale.py " + " ".join(TOY) + " --json ")
    steps = {"steps": 3, "kept": 4, "anomaly": 2}
    for name, scenario in report["scenarios"].items():
        assert scenario["rules"] == scale.SCENARIOS[name][0]
        for side in ("bad", "good"):
            assert scenario[side]["steps"] == steps[scale.SCENARIOS[name][3]]
            assert scenario[side]["median_step_s"] > 0
            assert scenario[side]["final_alloc_growth"] is None  # device memory is CUDA's to report


def test_kept_eval_outputs_hold_their_graphs_in_host_memory(toy_report):
    kept = toy_report[1]["scenarios"]["TL101_TL301_eval_outputs_kept"]
    assert kept["bad"]["rss_growth"] > kept["good"]["rss_growth"] + (1 << 20)


def test_the_docs_read_what_the_script_writes(toy_report):
    root, report = toy_report
    [(stem, read)] = measured.load_scale_reports(root)
    assert stem == "toy" and read == report
    entry = measured.scale_entry(stem, report, "TL503_anomaly", report["scenarios"]["TL503_anomaly"])
    assert entry["row"][0] == "anomaly detection left on in training" and entry["row"][2] == "n/a / n/a"


def test_committed_reports_say_what_the_script_says_of_each_scenario():
    for _, report in measured.load_scale_reports(ROOT):
        for name, scenario in report["scenarios"].items():
            rules, what, reads, _ = scale.SCENARIOS[name]
            assert (scenario["rules"], scenario["what"], scenario["reads"]) == (rules, what, reads), name


def test_a_scenario_that_raises_loses_only_itself(monkeypatch):
    def broken(name, hazard):
        if name == "TL302_retain_graph":
            raise RuntimeError("CUDA out of memory")
        return real(name, hazard)
    real = scale.step_function
    monkeypatch.setattr(scale, "step_function", broken)
    settings = {"device": "cpu", "model": "resnet18", "batch": 2, "image": 32,
                "steps": {"steps": 2, "kept": 2, "anomaly": 2}}
    found = scale.run(settings, ["TL302_retain_graph", "TL503_anomaly"])
    assert "RuntimeError: CUDA out of memory" in found["TL302_retain_graph"]["error"]
    assert found["TL503_anomaly"]["bad"]["steps"] == 2
