"""The gate, the cache and the process pool change speed, never results."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import CORPUS, FIXTURES, run_cli
from torchlint.engine import lint_source
from torchlint.rule import Rule
from torchlint.rules import ALL_RULES

SOURCES = sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))


def _json(*args, cwd=None):
    proc = run_cli("check", "--output-format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_gates_never_hide_a_finding(monkeypatch):
    gated = [lint_source(p.read_bytes(), str(p), ALL_RULES).diagnostics for p in SOURCES]
    monkeypatch.setattr(Rule, "may_apply", classmethod(lambda cls, source: True))
    for rule in ALL_RULES:
        monkeypatch.setattr(rule, "needs_tree", classmethod(lambda cls, facts: True))
    ungated = [lint_source(p.read_bytes(), str(p), ALL_RULES).diagnostics for p in SOURCES]
    assert gated == ungated
    assert sum(map(len, gated)) > 20


def test_jobs_do_not_change_results_or_order():
    serial = _json("--no-cache", "--jobs", "1", *SOURCES)
    parallel = _json("--no-cache", "--jobs", "2", *SOURCES)
    assert serial == parallel and len(serial) > 20


@pytest.fixture
def tree(project):
    shutil.copytree(FIXTURES, project / "fixtures")
    return project


def test_cache_gives_the_same_results_and_sees_edits(tree):
    cold = _json("fixtures", cwd=tree)
    assert (tree / ".torchlint_cache" / ".gitignore").read_text().strip().endswith("*")
    warm = _json("fixtures", cwd=tree)
    assert warm == cold
    bad = tree / "fixtures" / "TL301_stored_loss" / "bad.py"
    bad.write_text(bad.read_text().replace("losses.append(loss)", "losses.append(loss.item())"))
    edited = _json("fixtures", cwd=tree)
    assert len(edited) == len(cold) - 1


def test_no_cache_writes_nothing(tree):
    _json("--no-cache", "fixtures", cwd=tree)
    assert not (tree / ".torchlint_cache").exists()
