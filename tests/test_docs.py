"""Generated docs (rule pages, rule tables, evidence, charts) must match their sources.

The sources are the rule modules and the harness reports in docs/evidence/;
``python -m torchlint.docs`` regenerates everything and these tests fail when
anything is stale. None of them needs matplotlib or torch.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from torchlint import docs
from torchlint import measured as measured_module
from torchlint.docs import generated, render
from torchlint.rules import ALL_RULES

SECTIONS = ("## What it does", "## Why is this bad", "## Example", "## Use instead", "## Torch version",
            "## Evidence")
GENERATED = generated(ROOT)
CHARTED = ("TL101", "TL201", "TL202", "TL301", "TL302", "TL304", "TL503")
REGENERATE = "run python -m torchlint.docs"


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_committed_file_matches_its_sources(path):
    full = ROOT / path
    assert full.is_file(), f"missing {path}; {REGENERATE}"
    assert full.read_text(encoding="utf-8") == GENERATED[path], f"{path} is stale; {REGENERATE}"


def test_every_generated_file_is_covered():
    names = set(GENERATED)
    assert {f"docs/rules/{rule.code}.md" for rule in ALL_RULES} <= names
    assert {"docs/rules/index.md", "README.md", "docs/evidence.md", "src/torchlint/evidence.json",
            "docs/claims.md", "docs/comparison.md", "fixtures/README.md", "src/torchlint/catalogue.py"} <= names


def test_committed_charts_show_the_committed_series():
    assert docs.stale_charts(ROOT) == [], REGENERATE


def test_every_charted_rule_has_a_chart_on_its_page():
    expected = docs.expected_charts(ROOT)
    for code in CHARTED:
        charts = [path for path in expected if path.split("/")[-1].startswith(code + "-")]
        assert charts, f"{code}: no series in any harness report"
        page = GENERATED[f"docs/rules/{code}.md"]
        for path in charts:
            assert f"](../{path.split('/', 1)[1]})" in page


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_each_rule_documents_itself(rule):
    page = render(rule)
    for section in SECTIONS:
        assert section in page, f"{rule.code} lacks {section}"
    assert page.count("## Evidence") == 1, "the measured part is written once, from the JSON"
    assert rule.message and ";" in rule.message, "a message says what is wrong; and what to do"
    assert rule.name == rule.name.lower() and " " not in rule.name


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_page_shows_what_the_json_measured(rule):
    page = GENERATED[f"docs/rules/{rule.code}.md"]
    reports = docs.load_reports(ROOT)
    measured = [(stem, report) for stem, report in reports if rule.code in report["rules"]]
    assert measured, f"{rule.code} has no harness verdict in docs/evidence/"
    for stem, report in measured:
        result = report["rules"][rule.code]
        assert result["verdict"] in page and report["torch"] in page and docs.device_label(report) in page
        for metric in result["metrics"]:
            cells = (metric["metric"], metric["bad_text"], metric["good_text"], metric["verdict"])
            assert "| " + " | ".join(measured_module.cell(c) for c in cells) + " |" in page
        assert f"`python fixtures/harness.py --device {report['device']} --codes {rule.code}" in page
        assert f"docs/evidence/{stem}.json" in page


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_page_has_a_row_for_every_device_report(rule):
    """Measured, or why not: every rule page (default and opt-in) has a CPU row and a CUDA row."""
    page = GENERATED[f"docs/rules/{rule.code}.md"]
    reports = docs.load_reports(ROOT)
    assert {report["device"] for _, report in reports} >= {"cpu", "cuda"}
    for _, report in reports:
        label = measured_module.cell(docs.device_label(report))
        [row] = [line for line in page.splitlines() if line.startswith(f"| {label} | ")]
        assert row.count(" | ") == 3 and not row.endswith("|  |"), row
        if rule.code in report["errors"]:
            assert "the probe raised" in row


def test_an_earlier_fixtures_figures_are_never_shown_as_current():
    """On a device whose report was measured on another version of a fixture, the page says so."""
    for stem, report in docs.load_reports(ROOT):
        for code, entry in {**report["rules"], **report["errors"]}.items():
            changed = measured_module.changed_files(ROOT, entry["fixture"], entry["files"])
            page = GENERATED[f"docs/rules/{code}.md"]
            kind = measured_module.device_kind(report)
            line = next(line for line in page.splitlines() if docs.device_label(report) in line)
            if changed:
                assert line.startswith("**Not measured**"), line
                assert f"not measured on {kind} since the fixture changed" in line
                assert all(name in line for name in changed)
            else:
                assert "since the fixture changed" not in line


def _copy_sources(tmp_path):
    """The generated files and their sources, in a scratch tree the tests may edit."""
    for name in ("pyproject.toml", "README.md", "docs/evidence.md", "docs/claims.md", "docs/comparison.md",
                 "src/torchlint/evidence.json", "src/torchlint/catalogue.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs" / "rules", tmp_path / "docs" / "rules")
    shutil.copytree(ROOT / "docs" / "evidence", tmp_path / "docs" / "evidence")
    shutil.copytree(ROOT / "docs" / "claims", tmp_path / "docs" / "claims")
    shutil.copytree(ROOT / "docs" / "comparison", tmp_path / "docs" / "comparison")
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_page_that_disagrees_with_the_json_is_stale(tmp_path):
    root = _copy_sources(tmp_path)
    assert docs.stale(root) == []
    path = root / "docs" / "evidence" / "cpu-2core.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    report["rules"]["TL301"]["verdict"] = "not confirmed"
    report["rules"]["TL201"]["series"]["bad"][0] = 99.0
    path.write_text(json.dumps(report), encoding="utf-8")
    stale = set(docs.stale(root))
    assert {"docs/rules/TL301.md", "docs/rules/index.md", "docs/evidence.md", "src/torchlint/evidence.json",
            "docs/evidence/charts/TL201-cpu-2core.png"} <= stale
    assert "docs/rules/TL302.md" not in stale


def test_check_command_reports_stale_files_and_writes_nothing(tmp_path, capsys):
    root = _copy_sources(tmp_path)
    assert docs.main(["--root", str(root), "--check"]) == 0
    readme = root / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("[TL301]", "[TL3O1]"), encoding="utf-8")
    before = readme.read_text(encoding="utf-8")
    assert docs.main(["--root", str(root), "--check"]) == 1
    assert "stale: README.md" in capsys.readouterr().out
    assert readme.read_text(encoding="utf-8") == before
    assert docs.main(["--root", str(root), "--no-charts"]) == 0
    assert docs.main(["--root", str(root), "--check"]) == 0


def test_missing_markers_are_a_clear_error(tmp_path):
    root = _copy_sources(tmp_path)
    readme = root / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("<!-- rules-table:end -->", ""), encoding="utf-8")
    with pytest.raises(SystemExit, match="README.md needs one '<!-- rules-table:start -->'"):
        docs.generated(root)


def test_a_broken_report_is_a_clear_error(tmp_path):
    root = _copy_sources(tmp_path)
    (root / "docs" / "evidence" / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(SystemExit, match="cannot read .*broken.json"):
        docs.generated(root)


def test_stale_charts_without_matplotlib_are_a_clear_error(tmp_path, monkeypatch):
    root = _copy_sources(tmp_path)
    (root / "docs" / "evidence" / "charts" / "TL301-cpu-2core.png").unlink()
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(SystemExit, match=r"charts need matplotlib: pip install 'torchlint\[docs\]' \(1 chart"):
        docs.main(["--root", str(root)])
    assert docs.stale(root) == ["docs/evidence/charts/TL301-cpu-2core.png"], "the text files were still written"


def test_wrong_root_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        docs.main(["--root", str(tmp_path), "--check"])
    assert "not the torchlint repository root" in capsys.readouterr().err


def test_png_text_reads_the_digest_a_chart_carries():
    for path, digest in docs.expected_charts(ROOT).items():
        assert docs.png_text(ROOT / path)[docs.DIGEST_KEY] == f"torchlint-series:{digest}"


def test_rule_command_prints_the_measured_line_without_torch():
    code = (
        "import sys\n"
        "from torchlint.cli import main\n"
        "main(['rule', 'TL301'])\n"
        "assert 'torch' not in sys.modules and 'matplotlib' not in sys.modules, 'the linter imported torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "tests",
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""}, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads((ROOT / "docs" / "evidence" / "cpu-2core.json").read_text(encoding="utf-8"))
    verdict = report["rules"]["TL301"]["verdict"]
    assert "**Measured** on CPU (" in done.stdout and f"torch {report['torch']}: {verdict}" in done.stdout


def test_rule_modules_are_named_for_their_code():
    import importlib
    import pkgutil

    import torchlint.rules as package

    modules = [m.name for m in pkgutil.iter_modules(package.__path__)]
    for rule in ALL_RULES:
        [module] = [m for m in modules if m.startswith(rule.code.lower() + "_")]
        assert getattr(importlib.import_module(f"torchlint.rules.{module}"), rule.__name__) is rule


def test_readme_lists_every_rule():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for rule in ALL_RULES:
        assert rule.code in readme and rule.name in readme


def test_a_changed_fixture_turns_its_figures_into_an_earlier_fixtures(tmp_path):
    root = _copy_sources(tmp_path)
    good = root / "fixtures" / "TL301_stored_loss" / "good.py"
    good.write_text(good.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert "docs/rules/TL301.md" in docs.stale(root) and "docs/rules/TL302.md" not in docs.stale(root)
    page = docs.generated(root)["docs/rules/TL301.md"]
    for label in ("CPU (", "CUDA ("):
        [line] = [line for line in page.splitlines() if line.startswith(f"**Not measured** on {label}")]
        assert "since the fixture changed" in line and "good.py changed since" in line
    assert "**Measured** on" not in page


def test_a_probe_that_raised_is_shown_as_raised(tmp_path):
    root = _copy_sources(tmp_path)
    path = root / "docs" / "evidence" / "cpu-2core.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    rule = report["rules"].pop("TL202")
    report["errors"]["TL202"] = {"fixture": rule["fixture"], "files": rule["files"],
                                 "error": "RuntimeError: out of memory", "traceback": "Traceback ...\n"}
    path.write_text(json.dumps(report), encoding="utf-8")
    generated_pages = docs.generated(root)
    page = generated_pages["docs/rules/TL202.md"]
    assert "**Not measured** on CPU (" in page and "the probe raised RuntimeError: out of memory" in page
    assert "| [TL202](TL202.md) |" in generated_pages["docs/rules/index.md"]
    assert "probe raised" in generated_pages["docs/rules/index.md"].split("[TL202]")[1].splitlines()[0]
    assert "- TL202: not measured on CPU: the probe raised RuntimeError" in generated_pages["docs/evidence.md"]


def test_a_report_without_fixture_hashes_is_a_clear_error(tmp_path):
    root = _copy_sources(tmp_path)
    path = root / "docs" / "evidence" / "cpu-2core.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    del report["rules"]["TL301"]["files"]
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(SystemExit, match=r"no fixture file hashes \('files'\) for TL301; .*--measured-at"):
        docs.generated(root)


SCALE = measured_module.load_scale_reports(ROOT)


def test_every_scale_scenario_is_on_the_pages_of_its_rules():
    assert SCALE, "docs/evidence/scale/ holds no report"
    for stem, report in SCALE:
        for name, scenario in report["scenarios"].items():
            for code in scenario["rules"]:
                page = GENERATED[f"docs/rules/{code}.md"]
                assert f"### At scale: {report['model_label']}, batch {report['batch']}" in page
                assert f"| {measured_module.cell(scenario['what'])} | {scenario['bad']['steps']} |" in page
                assert scenario["reads"] in page and f"docs/evidence/scale/{stem}.json" in page


def test_the_scale_figures_the_issue_quotes_are_on_the_pages():
    # ResNet-50 batch 32 on an H200: what the pages must say in numbers
    tl101, tl302, tl503 = (GENERATED[f"docs/rules/{c}.md"] for c in ("TL101", "TL302", "TL503"))
    assert "30.69 GiB (+2.56 GiB/step) / 1.5 MiB" in tl101 and "(4.3x)" in tl101
    assert "5.93 GiB / 2.96 GiB (2.0x)" in tl302 and "66.1 ms / 19.8 ms (3.3x)" in tl503
    tl301 = GENERATED["docs/rules/TL301.md"]
    assert "| 60 | 30.0 KiB / 0 B | 2.77 GiB / 2.77 GiB | +10.7 MiB (+183.3 KiB/step) / +344.0 KiB |" in tl301
    assert "A host-memory leak, not a GPU one" in tl301


def test_rule_command_prints_the_cuda_line_too():
    done = subprocess.run([sys.executable, "-m", "torchlint", "rule", "TL301"], capture_output=True, text=True,
                          cwd=ROOT / "tests", check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads((ROOT / "docs" / "evidence" / "cuda-h100.json").read_text(encoding="utf-8"))
    assert f"**Measured** on CUDA (NVIDIA H100 80GB HBM3, CUDA 13.0), torch {report['torch']}: " \
           f"{report['rules']['TL301']['verdict']}" in done.stdout
    assert "### At scale: ResNet-50" in done.stdout


def test_the_claims_page_shows_every_report_and_verdict():
    from torchlint.claims_page import load_claims

    page = GENERATED["docs/claims.md"]
    plain, seed = load_claims(ROOT)
    assert {report["device"] for _, report in plain} == {"cpu", "cuda"} and seed
    for stem, report in plain + seed:
        assert f"(claims/{stem}.json)" in page and docs.device_label(report) in page
        for key, verdict in report["verdicts"].items():
            assert f"| {measured_module.cell(report['claims'][key])} |" in page and verdict in page
    assert page.count("| ResNet-50 | 256 |") == sum(
        1 for _, report in seed for run in report["runs"] if (run["model"], run["batch"]) == ("resnet50", 256))


def test_a_changed_claims_report_makes_the_claims_page_stale(tmp_path):
    root = _copy_sources(tmp_path)
    path = root / "docs" / "claims" / "cuda-h100.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    report["verdicts"]["inference_mode_time"] = "confirmed: 10% to 34%"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert "docs/claims.md" in docs.stale(root)


def _span(values):
    return f"{min(values) * 100:.0f}–{max(values) * 100:.0f}%"


def test_the_summaries_say_what_the_reports_say():
    """The hand-written summaries (README, docs/claims.md) quote figures: they must be the reports'."""
    # compared with their line breaks folded: a rewrapped paragraph says the same
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    claims = " ".join(GENERATED["docs/claims.md"].split())
    cuda = json.loads((ROOT / "docs" / "evidence" / "cuda-h100.json").read_text(encoding="utf-8"))
    confirmed = sum(rule["verdict"].startswith("confirmed") for rule in cuda["rules"].values())
    measured = len(cuda["rules"]) + len(cuda["errors"])  # the rules the repository had when it was measured
    assert f"{confirmed} of {measured} rules were confirmed" in readme
    cpu = json.loads((ROOT / "docs" / "evidence" / "cpu-2core.json").read_text(encoding="utf-8"))
    assert all(cpu["rules"][rule.code]["verdict"].startswith("confirmed") for rule in ALL_RULES if rule.default)
    seed = json.loads((ROOT / "docs" / "claims" / "seed-h100.json").read_text(encoding="utf-8"))
    big = [run for run in seed["runs"] if run["batch"] in (64, 256)]
    memory = _span([run["no_grad_memory_saving"] for run in big])
    gains = [run["no_grad_throughput_gain"] for run in big]
    assert memory == "68–88%" and f"saves {memory} of the forward's peak at batch 64" in claims
    assert f"{min(gains) * 100:.1f}% to {max(gains) * 100:.1f}%" == "-0.8% to -0.2%"
    assert "(−0.8% to −0.2%)" in claims and "(-0.8% to -0.2% at batch 64 and 256)" in readme
    assert "68-88% of the forward's peak at batch 64 and 256" in readme


def test_the_fixtures_page_lists_every_rule_and_what_its_bad_py_holds():
    page = GENERATED["fixtures/README.md"]
    for rule in ALL_RULES:
        [folder] = [p for p in (ROOT / "fixtures").iterdir() if p.name.startswith(rule.code + "_")]
        row = next(line for line in page.splitlines() if line.startswith(f"| [`{folder.name}/`]"))
        assert f"[{rule.code}](../docs/rules/{rule.code}.md) {rule.name}" in row
        assert ("(opt-in)" in row) is (not rule.default)


def test_the_comparison_page_shows_every_run_of_every_report():
    from torchlint.comparison_page import load_comparisons

    page = GENERATED["docs/comparison.md"]
    reports = load_comparisons(ROOT)
    assert reports, "no report of bench/compare.py in docs/comparison/"
    for stem, report in reports:
        assert f"`{report['command']}`" in page and f"(comparison/{stem}.json)" in page
        assert report["torchlint"]["commit"] in page and report["machine"]["cpu"] in page
        for tool in report["tools"].values():
            assert measured_module.cell(tool["label"]) in page
            for run in tool.get("runs", {}).values():
                row = next(line for line in page.splitlines()
                           if line.startswith(f"| {measured_module.cell(tool['label'])} | ")
                           and f" | {run['findings']:,} | {run['files_with_findings']} | " in line)
                assert f" | {run['exit_code']} | " in row
            if tool["status"] != "ran":
                assert measured_module.cell(tool["why"]) in page


def test_every_cited_cell_of_the_comparison_links_its_source():
    from torchlint.comparison_page import CITED, COLUMNS

    page = GENERATED["docs/comparison.md"]
    for row, cells in CITED.items():
        assert set(cells) == {name for name, _ in COLUMNS}, row
        for text, url in cells.values():
            assert url.startswith(("https://", "../")) or (ROOT / "docs" / url.split("#")[0]).is_file(), url
            assert f"{measured_module.cell(text)} ([source]({url}))" in page


def test_a_changed_comparison_report_makes_the_comparison_page_stale(tmp_path):
    root = _copy_sources(tmp_path)
    [path] = sorted((root / "docs" / "comparison").glob("*.json"))
    report = json.loads(path.read_text(encoding="utf-8"))
    run = next(iter(report["tools"]["torchlint"]["runs"].values()))
    run["findings"] += 1
    path.write_text(json.dumps(report), encoding="utf-8")
    assert docs.stale(root) == ["docs/comparison.md"]
