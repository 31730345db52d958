"""Runtime evidence: every fixture pair shows its rule's effect in bad.py and not in good.py.

Runs fixtures/harness.py on CPU. Only deterministic measures are asserted:
graph nodes and saved-tensor bytes, gradient ratios, parameter changes and
exceptions. Wall-clock time (TL101's second claim) is never asserted; the
harness measures it only when asked (``--timing-iterations``), and not here.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

from conftest import FIXTURES, load_module
from torchlint.rules import ALL_RULES

pytest.importorskip("torch")

ITERATIONS = 20


HARNESS = load_module(FIXTURES / "harness.py", "_torchlint_evidence_harness")


@pytest.fixture(scope="module")
def harness():
    return HARNESS


@pytest.fixture(scope="module")
def report(harness):
    return harness.run(device="cpu", iterations=ITERATIONS, timing=0)


def _numbers(report, code):
    rule = report["rules"][code]
    return rule["numbers"]["bad"], rule["numbers"]["good"]


DEFAULT_CODES = sorted(rule.code for rule in ALL_RULES if rule.default)


def test_every_default_rule_is_measured(report, harness):
    assert set(DEFAULT_CODES) <= set(report["rules"]) == set(harness.PROBES)


MEASURED_CLAIMS = sorted(code for code, (_, _, advisory) in HARNESS.PROBES.items() if not advisory)
ADVISORY = sorted(code for code, (_, _, advisory) in HARNESS.PROBES.items() if advisory)


def test_every_probe_lives_beside_its_fixture_pair(harness):
    # the harness holds shared machinery only: no rule's probe is built into it
    assert not [name for name in vars(harness) if name.startswith("probe_tl")]
    for code in harness.PROBES:
        assert (harness.fixture_dirs()[code] / "probe.py").is_file()


@pytest.mark.parametrize("code", MEASURED_CLAIMS)
def test_verdict_is_confirmed(report, code):
    assert report["rules"][code]["verdict"].startswith("confirmed: "), report["rules"][code]


def test_only_opt_in_claims_that_cpu_cannot_show_are_advisory():
    # speed (TL106, TL601, TL603, TL604), and TL705 and TL707 where torchvision is not installed
    opt_in = {rule.code for rule in ALL_RULES if not rule.default}
    vision_missing = importlib.util.find_spec("torchvision") is None
    assert set(ADVISORY) == {"TL106", "TL601", "TL603", "TL604"} | ({"TL705", "TL707"} if vision_missing else set())
    assert set(ADVISORY) <= opt_in


@pytest.mark.parametrize("code", ADVISORY)
def test_advisory_verdict_says_what_was_measured(report, code):
    verdict = report["rules"][code]["verdict"]
    assert verdict.split(":")[0] in ("confirmed", "not confirmed on cpu", "not measured"), verdict
    assert report["rules"][code]["advisory"] is True


def test_tl106_only_good_serves_in_inference_mode(report):
    bad, good = _numbers(report, "TL106")
    assert bad["forwards"] == good["forwards"] == 2 * ITERATIONS
    assert bad["inference_tensor_outputs"] == bad["forwards_in_inference_mode"] == 0
    assert good["inference_tensor_outputs"] == good["forwards_in_inference_mode"] == good["forwards"]
    # timing is off in this run, and the verdict must not pretend otherwise
    assert report["rules"]["TL106"]["verdict"].startswith("not measured: time")


def test_tl601_only_good_loads_in_worker_processes(report):
    bad, good = _numbers(report, "TL601")
    assert bad["worker_processes"] == 0 and good["worker_processes"] == 2
    assert bad["steps"] == good["steps"] == 4 * ITERATIONS


def test_tl603_only_bad_reads_the_device_every_step(report):
    bad, good = _numbers(report, "TL603")
    assert bad["steps"] == good["steps"] == ITERATIONS
    assert bad["host_reads"] == 2 * ITERATIONS  # loss and accuracy, every step
    assert good["host_reads"] == 2 * ITERATIONS // 5  # the same two, once per epoch of five steps
    # a CPU has no queue to wait for: the time is reported, never a confirmation there
    assert report["rules"]["TL603"]["verdict"].startswith("not confirmed on cpu: ")


def test_tl604_only_bad_copies_host_made_tensors_every_step(report):
    bad, good = _numbers(report, "TL604")
    assert bad["steps"] == good["steps"] == ITERATIONS
    assert bad["copies_to_device"] == 2 * ITERATIONS and bad["bytes_copied_per_step"] == 2 * 64 * 4
    assert good["copies_to_device"] == 0
    assert report["rules"]["TL604"]["numbers"]["identical_parameters"] is True


def test_tl611_only_the_unseeded_runs_save_different_checkpoints(report):
    bad, good = _numbers(report, "TL611")
    assert bad["max_abs_weight_difference"] > 0 and not bad["identical_files"]
    assert good["max_abs_weight_difference"] == 0 and good["identical_files"]


def test_tl612_workers_repeat_draws_unless_reseeded(report):
    bad, good = _numbers(report, "TL612")
    numbers = report["rules"]["TL612"]["numbers"]
    assert bad["workers"] == good["workers"] == 2 and bad["samples"] == good["samples"] == 128
    assert bad["distinct_draws"] == 32 and bad["second_epoch_repeats_first"]  # 2 workers x 2 epochs alike
    assert good["distinct_draws"] == 128 and not good["second_epoch_repeats_first"]
    assert numbers["with_generator"]["distinct_draws"] == 32  # a seeded generator= changes nothing


SERIES = {"TL101": None, "TL201": "x", "TL202": "float", "TL301": "count", "TL302": "bytes", "TL304": "count",
          "TL503": "s", "TL601": "s", "TL603": "s", "TL604": "s"}


@pytest.mark.parametrize("code", sorted(SERIES))
def test_charted_rules_carry_a_series_bad_beside_good(report, code):
    series = report["rules"][code]["series"]
    if code == "TL101":  # a time series, recorded only when timing is on
        assert series is None
        return
    assert series["unit"] == SERIES[code] and series["name"] and series["x"]
    assert len(series["bad"]) > 1 and len(series["good"]) > 1


def test_series_show_the_claim(report):
    tl201 = report["rules"]["TL201"]["series"]
    assert tl201["bad"] == pytest.approx(list(range(1, ITERATIONS + 1)), rel=1e-3)
    assert tl201["good"] == pytest.approx([1.0] * ITERATIONS, rel=1e-3)
    tl202 = report["rules"]["TL202"]["series"]
    assert set(tl202["bad"]) == {0.0} and min(tl202["good"]) > 0
    tl301 = report["rules"]["TL301"]["series"]
    assert max(tl301["bad"]) > 10 * max(tl301["good"])


def test_tl101_eval_forward_records_a_graph_only_in_bad(report):
    bad, good = _numbers(report, "TL101")
    assert bad["eval_forwards"] == good["eval_forwards"] > 0
    assert bad["nodes_per_forward"] > 0 and bad["saved_bytes_per_forward"] > 0
    assert good["nodes_per_forward"] == 0 and good["saved_bytes_per_forward"] == 0
    assert bad["error"] is None and good["error"] is None


def test_tl201_step_k_applies_k_times_the_gradient(report):
    bad, good = _numbers(report, "TL201")
    k = bad["frozen_steps"]
    assert k == good["frozen_steps"] == ITERATIONS
    assert bad["frozen_grad_ratio_per_step"] == pytest.approx(list(range(1, k + 1)), rel=1e-4)
    assert good["frozen_grad_ratio_per_step"] == pytest.approx([1.0] * k, rel=1e-6)
    assert bad["max_grad_rel_error"] > 1.0 and good["max_grad_rel_error"] < 1e-6


def test_tl202_step_never_moves_parameters_in_bad(report):
    bad, good = _numbers(report, "TL202")
    assert bad["steps"] == good["steps"] > 0
    assert bad["steps_that_moved_parameters"] == 0 and bad["max_abs_parameter_change"] == 0.0
    assert bad["steps_where_every_grad_was_none_or_zero"] == bad["steps"]
    assert good["steps_that_moved_parameters"] == good["steps"]
    assert good["steps_where_every_grad_was_none_or_zero"] == 0


def test_tl301_live_graphs_grow_every_iteration_only_in_bad(report):
    bad, good = _numbers(report, "TL301")
    assert bad["steps"] == good["steps"] > ITERATIONS
    assert bad["nodes_growth_per_iter"] >= 3 and bad["graph_bytes_growth_per_iter"] > 0
    assert good["nodes_growth_per_iter"] == 0 and good["graph_bytes_growth_per_iter"] == 0
    # the last step of the long loop holds one graph per iteration in bad, one graph in good
    assert bad["peak_nodes"] > 10 * good["peak_nodes"]


def test_tl302_saved_tensors_outlive_backward_only_in_bad(report):
    bad, good = _numbers(report, "TL302")
    assert bad["steps"] == good["steps"] > 0
    assert bad["min_saved_bytes_after_step"] > 0
    assert good["max_saved_bytes_after_step"] == 0


def test_tl401_bad_raises_at_the_marked_lines_and_good_runs(report, harness):
    bad, good = _numbers(report, "TL401")
    for site in ("main", "train_critic"):
        raised = bad["raised"][site]
        assert raised["type"] == "RuntimeError"
        assert raised["message"].startswith("a leaf Variable that requires grad is being used in an in-place")
        assert raised["line_marked"] == ["TL401"]
        assert good["raised"][site] is None


def test_cli_writes_json_with_environment_and_table(harness, tmp_path, capsys):
    out = tmp_path / "evidence" / "cpu.json"
    code = harness.main(["--device", "cpu", "--codes", "TL202,TL401", "--timing-iterations", "0",
                         "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "rule" in printed and "verdict" in printed and "TL401" in printed
    data = json.loads(out.read_text())
    assert data["device"] == "cpu" and data["cuda"] is None
    assert data["torch"] and data["device_name"] and data["cpu_cores"] >= 1
    assert set(data["rules"]) == {"TL202", "TL401"}
    assert data["rules"]["TL202"]["sizes"]["optimizer_steps"] > 0


def test_update_replaces_only_the_rules_measured_again(harness):
    machine = {"device": "cpu", "device_name": "x86", "torch": "2.13.0", "cuda": None, "torch_threads": 1,
               "iterations": 20, "timing_iterations": 100}
    existing = {**machine, "load_average_1min": 1.0, "rules": {"TL101": {"v": 1}, "TL201": {"v": 2}},
                "errors": {"TL402": {"error": "TypeError: old"}, "TL501": {"error": "ValueError: kept"}}}
    fresh = {**machine, "load_average_1min": 3.0, "rules": {"TL201": {"v": 3}, "TL150": {"v": 4}, "TL402": {"v": 5}},
             "errors": {"TL101": {"error": "RuntimeError: new"}}}
    merged = harness.updated(existing, fresh)
    # a rule measured again loses its old error; a rule that raised this time loses its old figures
    assert merged["rules"] == {"TL150": {"v": 4}, "TL201": {"v": 3}, "TL402": {"v": 5}}
    assert merged["errors"] == {"TL101": {"error": "RuntimeError: new"}, "TL501": {"error": "ValueError: kept"}}
    assert list(merged["rules"]) == ["TL150", "TL201", "TL402"]
    with pytest.raises(ValueError, match="torch"):
        harness.updated(existing, {**fresh, "torch": "2.14.0"})


def test_a_probe_that_raises_loses_only_its_own_rule(harness, monkeypatch, capsys, tmp_path):
    def broken(bad, good, device, iterations, timing):
        raise TypeError("can't convert cuda:0 device type tensor to numpy")
    probe, claim, advisory = harness.PROBES["TL402"]
    monkeypatch.setitem(harness.PROBES, "TL402", (broken, claim, advisory))
    out = tmp_path / "report.json"
    status = harness.main(["--device", "cpu", "--codes", "TL202,TL402,TL404", "--timing-iterations", "0",
                           "--json", str(out)])
    assert status == 1, "a probe that raised is not a clean run"
    report = json.loads(out.read_text())
    assert set(report["rules"]) == {"TL202", "TL404"}
    assert all(r["verdict"].startswith("confirmed") for r in report["rules"].values())
    error = report["errors"]["TL402"]
    assert error["error"] == "TypeError: can't convert cuda:0 device type tensor to numpy"
    assert "Traceback" in error["traceback"] and error["fixture"] == "TL402_numpy_on_grad_tensor"
    assert error["files"] == harness.file_hashes("TL402")
    captured = capsys.readouterr()
    assert "TL402: the probe raised TypeError" in captured.err and "=> the probe raised" in captured.out


def test_every_rule_records_the_files_it_was_measured_on(report, harness):
    for code, rule in report["rules"].items():
        folder = harness.fixture_dirs()[code]
        assert set(rule["files"]) == {name for name in harness.MEASURED_FILES if (folder / name).is_file()}
        assert rule["files"] == harness.file_hashes(code)
        assert rule["files"]["bad.py"] == hashlib.sha256((folder / "bad.py").read_bytes()).hexdigest()


def test_merge_stamps_a_report_made_elsewhere_with_a_commits_fixtures(harness, tmp_path):
    if shutil.which("git") is None or not (FIXTURES.parent / ".git").exists():
        pytest.skip("needs the repository's git history")
    head = subprocess.run(["git", "-C", str(FIXTURES.parent), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    machine = {"device": "cuda", "device_name": "GPU", "torch": "2.11.0", "cuda": "13.0", "torch_threads": 16,
               "iterations": 20, "timing_iterations": 100}
    first = {**machine, "rules": {"TL201": {"fixture": "TL201_missing_zero_grad", "verdict": "confirmed",
                                    "metrics": []}},
             "errors": {"TL705": "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module\n"}}
    second = {**machine, "rules": {"TL705": {"fixture": "TL705_torchvision_pretrained", "verdict": "confirmed",
                                     "metrics": []}},
              "errors": {}}
    paths = []
    for index, data in enumerate((first, second)):
        paths.append(tmp_path / f"{index}.json")
        paths[-1].write_text(json.dumps(data))
    out = tmp_path / "merged.json"
    assert harness.main(["--merge", *map(str, paths), "--measured-at", head, "--json", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert set(merged["rules"]) == {"TL201", "TL705"} and merged["errors"] == {}
    assert merged["fixtures_at"] == head
    committed = subprocess.run(["git", "-C", str(FIXTURES.parent), "show",
                                f"{head}:fixtures/TL201_missing_zero_grad/bad.py"], capture_output=True, check=True)
    assert merged["rules"]["TL201"]["files"]["bad.py"] == hashlib.sha256(committed.stdout).hexdigest()
    # a bare traceback from an external runner becomes an error entry
    alone = harness.merged([paths[0]], head)
    assert alone["errors"]["TL705"]["error"] == "ModuleNotFoundError: No module"
    with pytest.raises(SystemExit):
        harness.main(["--merge", str(paths[0]), "--measured-at", "0" * 40, "--json", str(out)])


def test_tl705_probe_reads_the_rules_table_without_torchlint(harness, monkeypatch):
    from torchlint.model.torchvision_weights import loads_imagenet_v1

    probe = _probe_alone(harness, "TL705", "_tl705_probe_alone")
    for name in [n for n in sys.modules if n == "torchlint" or n.startswith("torchlint.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torchlint", None)  # as if the linter were not installed
    table = probe._rule_table()
    for builder in ("resnet50", "vit_b_16", "detection.fasterrcnn_resnet50_fpn", "vit_h_14", "resnet.resnet18"):
        assert table.loads_imagenet_v1(builder) == loads_imagenet_v1(builder), builder
    assert "torchlint" not in probe.__dict__


def _probe_alone(harness, code, name):
    return load_module(harness.fixture_dirs()[code] / "probe.py", name)


def _fixture_module(path, text):
    path.write_text(text)
    return load_module(path, f"_tl_stand_in_{path.stem}")


def test_tl702_a_run_that_wedges_is_killed_and_tried_again(harness, monkeypatch, tmp_path):
    probe = _probe_alone(harness, "TL702", "_tl702_probe_alone")
    monkeypatch.setattr(probe, "LIMIT_S", 2)
    tries = tmp_path / "tries"
    stuck = _fixture_module(tmp_path / "stuck.py", (
        "import time\n"
        "def main(device='cpu', iterations=1):\n"
        f"    open({str(tries)!r}, 'a').write('x')\n"
        "    time.sleep(600)\n"))
    with pytest.raises(RuntimeError, match=r"stuck.*sent nothing in 2 s, 2 times"):
        probe._run_apart(HARNESS, stuck, "cpu", 1)
    assert tries.read_text() == "xx"


def test_tl702_a_run_that_raises_fails_the_probe_with_its_error(harness, tmp_path):
    probe = _probe_alone(harness, "TL702", "_tl702_probe_alone")
    broken = _fixture_module(tmp_path / "broken.py", "def main(device='cpu', iterations=1):\n    raise ValueError('no gloo')\n")
    with pytest.raises(RuntimeError, match=r"broken.*raised ValueError: no gloo"):
        probe._run_apart(HARNESS, broken, "cpu", 1)


def test_tl205_only_good_clips_what_the_step_applies(report):
    bad, good = _numbers(report, "TL205")
    assert bad["steps"] == good["steps"] > 0
    assert bad["steps_over_max_norm"] == bad["steps"] and good["steps_over_max_norm"] == 0
    assert bad["empty_generator_warnings"] > 0 == good["empty_generator_warnings"]
    series = report["rules"]["TL205"]["series"]
    assert series["unit"] == "float" and max(series["good"]) <= good["max_norm"] * (1 + 1e-4) < min(series["bad"])


def test_tl206_scaled_gradients_are_off_by_the_loss_scale(report):
    ratios = report["rules"]["TL206"]["numbers"]["ratios"]
    assert all(ratio == pytest.approx(2.0 ** 16, rel=1e-2) for ratio in ratios.values())
    bad, good = _numbers(report, "TL206")
    assert "RuntimeError" in bad["error"] and good["error"] is None
    assert bad["no_update_loop_steps"] == 1 < good["no_update_loop_steps"]


def test_tl508_a_thrown_away_compile_compiles_nothing(report):
    bad, good = _numbers(report, "TL508")
    assert bad["graphs"] == 0 and not bad["model_compiles_its_calls"]
    assert good["graphs"] >= 1 and good["model_compiles_its_calls"]


def test_tl509_rebinding_compile_every_epoch_leaves_a_function_without_recompiling(report):
    bad, good = _numbers(report, "TL509")
    assert bad["holds"] == "function" and not bad["is_module"] and bad["state_dict"] == "raises AttributeError"
    assert good["is_module"] and good["state_dict"] == "works"
    assert bad["hooked_forwards"] < good["hooked_forwards"]
    # what torch 2.13 does not do: compile again for the same options
    assert bad["graphs"] == good["graphs"] == 1
    assert report["rules"]["TL509"]["numbers"]["graphs_when_compiled_every_step_without_rebinding"] == 1


def test_tl901_every_rank_trains_on_the_whole_dataset_only_in_bad(report):
    bad, good = _numbers(report, "TL901")
    dataset = report["rules"]["TL901"]["sizes"]["dataset"]
    assert bad["ranks"] == good["ranks"] == 2
    assert bad["samples_per_rank"] == [dataset] * bad["epochs"]
    assert bad["shared_fraction"] == [1.0] * bad["epochs"]
    assert good["samples_per_rank"] == [dataset / 2] * good["epochs"]
    assert good["shared_fraction"] == [0.0] * good["epochs"]


def test_tl902_every_epoch_repeats_the_first_order_only_in_bad(report):
    bad, good = _numbers(report, "TL902")
    assert bad["epochs"] >= 3 and bad["later_epochs_repeating_the_first"] == bad["epochs"] - 1
    assert good["later_epochs_repeating_the_first"] == 0
    assert bad["shares_disjoint"] and good["shares_disjoint"]


def test_tl903_an_optimizer_built_before_fully_shard_never_moves_the_model(report):
    bad, good = _numbers(report, "TL903")
    assert bad["largest_weight_change"] == 0.0 and bad["first_loss"] == bad["last_loss"]
    assert good["largest_weight_change"] > 0
    assert all(last < first for first, last in zip(good["first_loss"], good["last_loss"]))


def test_tl904_replicas_drift_only_when_the_forward_skips_ddp(report):
    bad, good = _numbers(report, "TL904")
    assert bad["largest_difference_between_ranks"] > 0 and not bad["replicas_identical"]
    assert good["largest_difference_between_ranks"] == 0 and good["replicas_identical"]
    sharded = report["rules"]["TL904"]["numbers"]["fully_shard_step"]
    assert "mixed torch.Tensor and DTensor" in sharded["model.forward(x)"] and sharded["model(x)"] == "runs"
