"""Roles across the project's own modules: a model class, a loss class and a loss function
imported from a sibling module count as what they are, on every surface, and a cached
result is dropped when a module it read changes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import cli_findings, flake8_findings, run_cli
import libcst as cst

from torchlint.engine import lint_source
from torchlint.model import FileModel
from torchlint.model.project import project_root, summarize
from torchlint.rules import ALL_RULES

MODELS = """\
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def forward(self, x):
        return x


class Learner(Backbone):
    pass


class SmoothLoss(nn.Module):
    def forward(self, a, b):
        return (a - b).pow(2).mean()


def penalty(out, t):
    return F.smooth_l1_loss(out, t)
"""

# Nothing here is named like a model: only the project says what ``Learner`` is.
TRAIN = """\
import torch
from .models import Learner, SmoothLoss, penalty
from . import models


def fit(data):
    learner = Learner()
    opt = torch.optim.SGD(learner.parameters(), lr=0.1)
    kept = []
    for x, y in data:
        out = learner(x)
        opt.zero_grad()
        out.sum().backward()
        opt.step()
        kept.append(out)


def fit2(data):
    runner = models.Learner()
    runs = []
    for x, y in data:
        out = runner(x)
        out.sum().backward()
        runs.append(out)
"""
EXPECTED = {(15, "TL301"), (24, "TL301")}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(MODELS)
    (package / "train.py").write_text(TRAIN)
    return tmp_path


def _lines(findings) -> set:
    return {(line, code) for line, _, code in findings}


def test_imported_roles_are_known(project):
    found = cli_findings("--no-cache", "pkg/train.py", cwd=project)
    assert _lines(found[str(Path("pkg/train.py"))]) == EXPECTED


def test_a_file_alone_knows_less(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    result = lint_source(TRAIN, str(tmp_path / "train.py"), ALL_RULES)
    assert {(d.line, d.code) for d in result.diagnostics} < EXPECTED


def test_every_surface_sees_the_same_project(project):
    cli = _lines(cli_findings("--no-cache", "pkg/train.py", cwd=project)[str(Path("pkg/train.py"))])
    stdin = run_cli("check", "--no-cache", "--output-format", "concise", "--stdin-filename", "pkg/train.py", "-",
                    cwd=project, stdin=TRAIN)
    stdin_lines = {(int(line.split(":")[1]), line.split(": ")[1].split()[0])
                   for line in stdin.stdout.splitlines() if line.startswith("pkg/train.py:")}
    flake8 = _lines(flake8_findings("pkg/train.py", cwd=project)[str(Path("pkg/train.py"))])
    server = subprocess.run(
        [sys.executable, "-c", "import sys; from torchlint.server import lint_document; "
         "print(sorted((d.line, d.code) for d in lint_document(sys.argv[1], open(sys.argv[1]).read())))",
         str(project / "pkg" / "train.py")],
        capture_output=True, text=True, cwd=project, timeout=120,
    )
    if "pygls" in server.stderr:
        pytest.skip("the language server extra is not installed")
    assert cli == stdin_lines == flake8 == EXPECTED
    assert server.stdout.strip() == str(sorted(EXPECTED))


def test_cache_drops_a_result_when_a_module_it_read_changes(project):
    first = _lines(cli_findings("pkg/train.py", cwd=project)[str(Path("pkg/train.py"))])
    models = project / "pkg" / "models.py"
    models.write_text(MODELS.replace("class Learner(Backbone):", "class Learner:"))
    stamp = models.stat()
    os.utime(models, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    second = _lines(cli_findings("pkg/train.py", cwd=project).get(str(Path("pkg/train.py")), set()))
    assert first == EXPECTED
    assert second == set()  # Learner is no module any more


def test_a_broken_sibling_module_is_no_crash(project):
    (project / "pkg" / "models.py").write_text("class Learner(:\n")
    proc = run_cli("check", "--no-cache", "pkg/train.py", cwd=project)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr


def test_reexports_and_absolute_imports(tmp_path):
    (tmp_path / "setup.py").write_text("")
    nets = tmp_path / "nets"
    nets.mkdir()
    (nets / "__init__.py").write_text("from .resnet import Tower\n")
    (nets / "resnet.py").write_text("from torch import nn\n\nclass Tower(nn.Module):\n    pass\n")
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""\
        from nets import Tower


        def fit(data, opt):
            tower = Tower()
            outs = []
            for x in data:
                out = tower(x)
                opt.zero_grad()
                out.sum().backward()
                opt.step()
                outs.append(out)
        """))
    result = lint_source(script.read_text(), str(script), ALL_RULES)
    assert [(d.line, d.code) for d in result.diagnostics] == [(12, "TL301")]
    assert set(result.dependencies) == {str(nets / "__init__.py"), str(nets / "resnet.py")}


def test_criteria_and_loss_functions_from_the_project(project):
    source = TRAIN + "\ncrit = SmoothLoss()\n"
    model = FileModel(cst.parse_module(source), str(project / "pkg" / "train.py"))
    assert "crit" in model.roles.criteria and "learner" in model.roles.models
    assert model.roles.is_project_loss_function("penalty")
    assert not model.roles.is_project_loss_function("Learner")
    assert set(model.consulted_files()) == {str(project / "pkg" / "models.py")}


def test_summary_reads_classes_and_loss_functions():
    summary = summarize(MODELS)
    assert summary.class_bases["Learner"] == ("Backbone",)
    assert summary.loss_functions == frozenset({"penalty"})
    assert summarize("def broken(:\n") is None


def test_project_root_is_the_nearest_marked_folder(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert project_root(deep / "x.py") == tmp_path
