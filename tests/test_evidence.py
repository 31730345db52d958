"""Runtime evidence: every fixture pair shows its rule's effect in bad.py and not in good.py.

Runs fixtures/harness.py on CPU. Only deterministic measures are asserted:
graph nodes and saved-tensor bytes, gradient ratios, parameter changes and
exceptions. Wall-clock time (TL101's second claim) is never asserted; the
harness measures it only when asked (``--timing-iterations``), and not here.
"""
from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import FIXTURES
from torchlint.rules import ALL_RULES

pytest.importorskip("torch")

ITERATIONS = 20


def _harness():
    spec = importlib.util.spec_from_file_location("_torchlint_evidence_harness", FIXTURES / "harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HARNESS = _harness()


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


@pytest.mark.parametrize("code", sorted(HARNESS.PROBES))
def test_verdict_is_confirmed(report, code):
    assert report["rules"][code]["verdict"].startswith("confirmed: "), report["rules"][code]


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
        assert raised["message"].startswith(harness.LEAF_MESSAGE)
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
