"""Shared helpers: read ``# expect:`` markers and run torchlint the ways users do."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = Path(__file__).resolve().parent / "corpus"
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TL\d+(?:\s*,\s*TL\d+)*)")


# A training loop that keeps every loss's graph (TL301 on line 11), shared by
# the tests of the CLI, stdin, output formats and the language server.
STORED_LOSS = """\
import torch

def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss){suffix}
    return losses
"""


def load_module(path: Path, name: str):
    """The Python file at ``path`` imported afresh as ``name`` (not put in ``sys.modules``):
    the fixtures' harness and probes, a fixed ``bad.py``, a stand-in fixture."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expected(path: Path) -> set:
    """{(line, code)} from ``# expect: TL301`` comments."""
    out = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            out.update((number, code.strip()) for code in match.group("codes").split(","))
    return out


def without_gates(monkeypatch) -> None:
    """Every rule asked of every file: no text gate, no tree gate, no unit-test or
    other-framework shortcut. Gates change speed only; tests compare against this."""
    from torchlint.rule import Rule
    from torchlint.rules import ALL_RULES
    from torchlint.tree_gate import TreeIndex

    monkeypatch.setattr(Rule, "may_apply", classmethod(lambda cls, source: True))
    for rule in ALL_RULES:
        monkeypatch.setattr(rule, "needs_tree", classmethod(lambda cls, tree_index: True))
    monkeypatch.setattr(TreeIndex, "is_unit_test_or_other_framework", lambda self, path: False)


def run_cli(*args, cwd=None, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "torchlint", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, input=stdin, timeout=300,
    )


def cli_findings(*paths, cwd=None) -> dict:
    """{path: {(line, col, code)}} from ``torchlint check --output-format json``."""
    proc = run_cli("check", "--output-format", "json", *paths, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    out = {}
    for d in json.loads(proc.stdout):
        out.setdefault(str(Path(d["path"])), set()).add((d["line"], d["column"], d["code"]))
    return out


def run_flake8(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=300,
    )


_FLAKE8_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")


def flake8_findings(*paths, select="TL", cwd=None) -> dict:
    proc = run_flake8(f"--select={select}", *paths, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        m = _FLAKE8_LINE.match(line)
        assert m, line
        out.setdefault(str(Path(m["path"])), set()).add((int(m["line"]), int(m["col"]), m["code"]))
    return out


def strip_col(found: set) -> set:
    return {(line, code) for line, _, code in found}


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty project folder (with its own pyproject.toml) as the working directory."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def nodes_and_parents(module) -> tuple:
    """Every syntax node of a libcst module in the model's walk order, the module first, and
    ``id(node) -> the node it sits in`` for all but the module, read off the plain walk."""
    from torchlint.model.walk import walk

    nodes, parents, open_nodes = [], {}, []

    def enter(node):
        if open_nodes:
            parents[id(node)] = open_nodes[-1]
        open_nodes.append(node)
        nodes.append(node)

    walk(module, enter, lambda node: open_nodes.pop())
    return nodes, parents
