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
    assert {"docs/rules/index.md", "README.md", "docs/evidence.md", "src/torchlint/evidence.json"} <= names


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
            assert "| " + " | ".join(docs._cell(c) for c in cells) + " |" in page
        assert f"`python fixtures/harness.py --device {report['device']} --codes {rule.code}" in page
        assert f"docs/evidence/{stem}.json" in page


def _copy_sources(tmp_path):
    """The generated files and their sources, in a scratch tree the tests may edit."""
    for name in ("pyproject.toml", "README.md", "docs/evidence.md", "src/torchlint/evidence.json",
                 "src/torchlint/catalogue.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "docs" / "rules", tmp_path / "docs" / "rules")
    shutil.copytree(ROOT / "docs" / "evidence", tmp_path / "docs" / "evidence")
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
