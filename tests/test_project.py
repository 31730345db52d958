"""Roles across the project's own modules: a model class, a loss class and a loss function
imported from a sibling module count as what they are, on every surface, and a cached
result is dropped when a module it read changes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import cli_findings, flake8_findings, run_cli
import libcst as cst

from torchlint.engine import lint_source
from torchlint.model import FileModel
from torchlint.model.function_effects import effects, returns_plain, rewalked, written_in_place
from torchlint.model import project as project_module
from torchlint.model.project import ProjectIndex, project_root, summarize, view_for
from torchlint.model.mode_effects import mode_free_class
from torchlint.model.shapes import returns_zero_dim
from torchlint.rules import ALL_RULES


def _top_level_answers(source: str, fact) -> dict:
    """``fact`` of each top-level function of ``source``, asked of its libcst model as a call
    site in another module asks it."""
    model = FileModel(cst.parse_module(source), "helpers.py")
    return {s.name: model.derived(fact, s) for s in model.scopes if s.parent is model.module_scope}


def _top_level_facts(source: str, fact) -> dict:
    return {name: set(answer) for name, answer in _top_level_answers(source, fact).items()}


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


def test_a_module_touched_but_unchanged_keeps_its_summary(tmp_path):
    """A new stamp means reading the text again; only a new text is summarised again."""
    module = tmp_path / "helpers.py"
    module.write_text("def loss_of(x):\n    return F.mse_loss(x, x)\n")
    index = ProjectIndex(tmp_path)
    first = index.summary(module)
    stamp = module.stat()
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    touched = index.summary(module)
    module.write_text("def loss_of(x):\n    return x\n")
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 2_000_000_000))
    changed = index.summary(module)
    assert first is not None and first.functions["loss_of"].may_return_loss
    assert touched is first
    assert changed is not first and changed is not None and not changed.functions["loss_of"].may_return_loss


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
    assert {name for name, f in summary.functions.items() if f.may_return_loss} == {"penalty"}
    assert summarize("def broken(:\n") is None


def test_a_function_of_the_project_is_a_loss_when_its_model_says_it_returns_one(tmp_path):
    """What a function returns is the libcst model's answer (``effects``), whatever its name;
    a loss computed under ``no_grad`` carries no graph and makes no loss function."""
    _in_project(tmp_path, helpers=textwrap.dedent("""\
        import torch
        import torch.nn.functional as F


        def focal(out, y, gamma=2.0):
            ce = F.cross_entropy(out, y, reduction="none")
            return ((1 - torch.exp(-ce)) ** gamma * ce).mean()


        @torch.no_grad()
        def logged(out, y):
            return F.cross_entropy(out, y)


        def accuracy(out, y):
            return (out.argmax(1) == y).float().mean()
        """))
    source = "from helpers import accuracy, focal, logged\n"
    model = FileModel(cst.parse_module(source), str(tmp_path / "train.py"))
    assert [n for n in ("focal", "logged", "accuracy") if model.roles.is_project_loss_function(n)] == ["focal"]


def test_project_root_is_the_nearest_marked_folder(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert project_root(deep / "x.py") == tmp_path


def test_a_marker_made_or_removed_later_moves_the_root(tmp_path):
    """The folders' answers are kept while their mtimes stand (old enough to be settled):
    a marker made or removed since is seen at once."""
    (tmp_path / "setup.py").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    settled = time.time_ns() - 60 * 10**9  # as if the folders had been made a minute ago
    for folder in (tmp_path, tmp_path / "a", deep):
        os.utime(folder, ns=(settled, settled))
    assert project_root(deep / "x.py") == tmp_path
    assert project_root(deep / "x.py") == tmp_path  # kept: one stat per folder
    (tmp_path / "a" / ".git").mkdir()
    assert project_root(deep / "x.py") == tmp_path / "a"
    (tmp_path / "a" / ".git").rmdir()
    assert project_root(deep / "x.py") == tmp_path


def test_a_folder_changed_in_the_last_seconds_is_looked_in_afresh(tmp_path):
    """A marker made within the clock's tick of the last look leaves the folder's mtime as
    it was: an answer is kept only for a folder whose last change is seconds old."""
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    (tmp_path / "setup.py").write_text("")
    now = time.time_ns()
    os.utime(tmp_path / "a", ns=(now, now))
    assert project_root(deep / "x.py") == tmp_path
    (tmp_path / "a" / "pyproject.toml").write_text("")
    os.utime(tmp_path / "a", ns=(now, now))  # the same mtime, as within one tick
    assert project_root(deep / "x.py") == tmp_path / "a"


def _settle(*folders: Path) -> None:
    settled = time.time_ns() - 60 * 10**9  # as if the folders had been made a minute ago
    for folder in folders:
        os.utime(folder, ns=(settled, settled))


def test_a_module_made_or_removed_later_is_seen_though_listings_are_kept(tmp_path):
    """``module_file`` reads folders' listings, kept while their mtimes stand: a module made
    or removed since, next to the importer or at the root, is seen at once."""
    (tmp_path / "setup.py").write_text("")
    app = tmp_path / "app"
    app.mkdir()
    train = app / "train.py"
    train.write_text("")
    _settle(tmp_path, app)
    index = ProjectIndex(tmp_path)
    assert index.module_file("helpers", 0, train) is None
    (tmp_path / "helpers.py").write_text("")
    assert index.module_file("helpers", 0, train) == tmp_path / "helpers.py"
    (app / "helpers").mkdir()
    (app / "helpers" / "__init__.py").write_text("")
    assert index.module_file("helpers", 0, train) == app / "helpers" / "__init__.py"
    (app / "helpers" / "__init__.py").unlink()
    (app / "helpers").rmdir()
    (tmp_path / "helpers.py").unlink()
    assert index.module_file("helpers", 0, train) is None


def test_a_folder_of_many_entries_is_asked_path_by_path(tmp_path, monkeypatch):
    """A folder of more entries than a listing is kept for (a data folder beside the script)
    answers the same, each path asked of the file system."""
    monkeypatch.setattr(project_module, "_MAX_LISTED", 3)
    (tmp_path / ".git").mkdir()
    for n in range(5):
        (tmp_path / f"sample_{n}.png").write_text("")
    (tmp_path / "helpers.py").write_text("")
    (tmp_path / "pkg").mkdir()
    _settle(tmp_path)
    assert project_module.listing(str(tmp_path)).files is None
    index = ProjectIndex(tmp_path)
    assert index.module_file("helpers", 0, tmp_path / "train.py") == tmp_path / "helpers.py"
    assert index.module_file("pkg", 0, tmp_path / "train.py") is None  # a folder, no __init__.py
    assert project_root(tmp_path / "train.py") == tmp_path


def test_a_folder_in_use_is_asked_path_by_path_and_not_read(tmp_path):
    """A folder changed in the last seconds (``/tmp``, checkpoints being written) is not
    listed, which would happen again at every lint: each path is asked, as before."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "helpers.py").write_text("")
    assert project_module.listing(str(tmp_path)).files is None
    assert str(tmp_path) not in project_module._LISTINGS
    assert ProjectIndex(tmp_path).module_file("helpers", 0, tmp_path / "train.py") == tmp_path / "helpers.py"
    assert project_root(tmp_path / "train.py") == tmp_path
    _settle(tmp_path)
    assert project_module.listing(str(tmp_path)).files == {"setup.py", "helpers.py"}
    assert project_module.listing(str(tmp_path / "helpers.py")) is None  # a file is no folder


def test_listings_kept_are_bounded(tmp_path, monkeypatch):
    """A long editor session over a big repository keeps the listings of the folders read
    last, not of every folder it ever read."""
    monkeypatch.setattr(project_module, "_MAX_FOLDERS", 2)
    monkeypatch.setattr(project_module, "_LISTINGS", {})
    folders = [tmp_path / name for name in "abc"]
    for folder in folders:
        folder.mkdir()
        (folder / "helpers.py").write_text("")
    _settle(*folders)
    for folder in folders:
        assert project_module.listing(str(folder)).files == {"helpers.py"}
    assert list(project_module._LISTINGS) == [str(folders[1]), str(folders[2])]


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges there")
def test_a_dangling_link_is_no_marker_and_no_module(tmp_path):
    """As ``os.path.exists`` and ``os.path.isfile`` say: a link to nothing is neither."""
    deep = tmp_path / "a"
    deep.mkdir()
    (tmp_path / "setup.cfg").write_text("")
    (deep / "pyproject.toml").symlink_to(deep / "gone.toml")
    (deep / "helpers.py").symlink_to(deep / "gone.py")
    (deep / "models.py").symlink_to(tmp_path / "setup.cfg")  # a link to a file is a file
    _settle(tmp_path, deep)
    assert project_root(deep / "train.py") == tmp_path
    index = ProjectIndex(tmp_path)
    assert index.module_file("helpers", 0, deep / "train.py") is None
    assert index.module_file("models", 0, deep / "train.py") == deep / "models.py"


def test_one_lint_reads_each_folder_once(tmp_path, monkeypatch):
    """A file's imports are looked for in the same few folders: each is read (one ``stat``)
    once per lint, and a folder its parent lacks is not looked for at all."""
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "helpers.py").write_text("def accuracy(out, y):\n    return out\n")
    train = tmp_path / "train.py"
    train.write_text("")
    _settle(tmp_path)
    read = []
    real = project_module.listing
    source = ("import numpy as np\nimport torch.nn.functional as F\nfrom helpers import accuracy\n"
              "from sklearn.metrics import f1_score\n"
              "x = np.zeros(3)\ny = F.relu(x)\nz = accuracy(x, y)\nw = f1_score(x, y)\n")
    model = FileModel(cst.parse_module(source), str(train))
    assert model.project is not None  # its root found first: the lint's own look at the folders above
    monkeypatch.setattr(project_module, "listing", lambda folder: read.append(folder) or real(folder))
    for call in model.calls:
        model.roles.is_project_loss_function(call.callee)
    assert read and len(read) == len(set(read))
    assert set(read) <= {str(tmp_path), str(tmp_path / "src")}


# -- function summaries: helpers of other modules, applied where they are called -------------
HELPERS = """\
import torch
import torch.nn.functional as F


def measure(net, batches):
    hits = 0
    for x, y in batches:
        hits += (net(x).argmax(1) == y).sum().item()
    return hits


@torch.no_grad()
def measure_quietly(net, batches):
    return sum((net(x).argmax(1) == y).sum().item() for x, y in batches)


def score(net, batches):
    net.eval()
    return sum((net(x).argmax(1) == y).sum().item() for x, y in batches)


def attack(net, x, y):
    x.requires_grad_(True)
    F.cross_entropy(net(x), y).backward()
    return x.grad.sign()


def batch_loss(net, x, y):
    out = net(x)
    loss = F.cross_entropy(out, y)
    return loss


def compute_loss(net, x, y):
    loss = F.cross_entropy(net(x), y)
    return loss.item()


def loss_and_value(net, x, y):
    loss = F.cross_entropy(net(x), y)
    return loss, loss.item()


def train_step(net, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward(retain_graph=True)
    opt.step()
    return loss.item()


def fit_head(head, feats, y, opt):
    opt.zero_grad()
    loss = F.cross_entropy(head(feats), y)
    loss.backward(retain_graph=True)
    opt.step()
"""

# Nothing in this file runs a forward, keeps a graph or retains one: the helpers do.
LOOP = """\
import torch
from .helpers import (measure, measure_quietly, score, attack, batch_loss, compute_loss,
                      loss_and_value, train_step, fit_head)


def fit(model, loader, val_loader, opt, trunk, heads):
    kept, floats, pairs, values = [], [], [], []
    for x, y in loader:
        loss = batch_loss(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        kept.append(loss)
        floats.append(compute_loss(model, x, y))
        graph, value = loss_and_value(model, x, y)
        pairs.append(graph)
        values.append(value)
    for x, y in loader:
        train_step(model, opt, x, y)
    for x, y in loader:
        feats = trunk(x)
        for head in heads:
            fit_head(head, feats, y, opt)


def check(model, val_loader):
    model.eval()
    acc = measure(model, val_loader)
    with torch.no_grad():
        acc = measure(model, val_loader)
    acc = measure_quietly(model, val_loader)
    return acc, score(model, val_loader)


def robustness(model, val_loader):
    model.eval()
    for x, y in val_loader:
        adversarial = attack(model, x, y)
        yield measure(model, [(adversarial, y)])
"""
HELPER_FINDINGS = {(13, "TL301"), (16, "TL301"), (19, "TL302"), (28, "TL101")}


@pytest.fixture
def helpers_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(HELPERS)
    (package / "loop.py").write_text(LOOP)
    return tmp_path


def test_helpers_of_other_modules_apply_at_their_calls(helpers_project):
    path = helpers_project / "pkg" / "loop.py"
    result = lint_source(LOOP, str(path), ALL_RULES)
    assert {(d.line, d.code) for d in result.diagnostics} == HELPER_FINDINGS
    assert set(result.dependencies) == {str(helpers_project / "pkg" / "helpers.py")}
    helpers = lint_source(HELPERS, str(helpers_project / "pkg" / "helpers.py"), ALL_RULES)
    # ``score`` puts the model in eval mode itself: reported there, not again at the call.
    assert {(d.line, d.code) for d in helpers.diagnostics} == {(19, "TL101")}


def test_a_helpers_file_alone_knows_only_what_names_say(tmp_path):
    (tmp_path / "loop.py").write_text(LOOP)
    alone = lint_source(LOOP, str(tmp_path / "loop.py"), ALL_RULES)
    # Named like losses, alone: the floats ``compute_loss`` and ``loss_and_value`` return look like
    # graphs; the retained backward and the forward in ``measure`` are not seen at all.
    assert {(d.line, d.code) for d in alone.diagnostics} == {(13, "TL301"), (14, "TL301"), (16, "TL301"),
                                                            (17, "TL301")}


def test_every_surface_sees_the_helpers(helpers_project):
    rel = str(Path("pkg/loop.py"))
    cli = _lines(cli_findings("--no-cache", "pkg/loop.py", cwd=helpers_project)[rel])
    stdin = run_cli("check", "--no-cache", "--output-format", "concise", "--stdin-filename", "pkg/loop.py", "-",
                    cwd=helpers_project, stdin=LOOP)
    stdin_lines = {(int(line.split(":")[1]), line.split(": ")[1].split()[0])
                   for line in stdin.stdout.splitlines() if line.startswith("pkg/loop.py:")}
    flake8 = _lines(flake8_findings("pkg/loop.py", cwd=helpers_project)[rel])
    assert cli == stdin_lines == flake8 == HELPER_FINDINGS
    server = subprocess.run(
        [sys.executable, "-c", "import sys; from torchlint.server import lint_document; "
         "print(sorted((d.line, d.code) for d in lint_document(sys.argv[1], open(sys.argv[1]).read())))",
         str(helpers_project / "pkg" / "loop.py")],
        capture_output=True, text=True, cwd=helpers_project, timeout=120,
    )
    if "pygls" in server.stderr:
        pytest.skip("the language server extra is not installed")
    assert server.stdout.strip() == str(sorted(HELPER_FINDINGS))


def test_cache_drops_a_result_when_a_helper_changes(helpers_project):
    rel = str(Path("pkg/loop.py"))
    first = _lines(cli_findings("pkg/loop.py", cwd=helpers_project)[rel])
    helpers = helpers_project / "pkg" / "helpers.py"
    fixed = (HELPERS.replace("def measure(net, batches):", "@torch.no_grad()\ndef measure(net, batches):")
             .replace("loss.backward(retain_graph=True)\n    opt.step()\n    return loss.item()",
                      "loss.backward()\n    opt.step()\n    return loss.item()"))
    helpers.write_text(fixed)
    stamp = helpers.stat()
    os.utime(helpers, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    second = _lines(cli_findings("pkg/loop.py", cwd=helpers_project)[rel])
    assert first == HELPER_FINDINGS
    assert second == HELPER_FINDINGS - {(19, "TL302"), (28, "TL101")}


def test_helpers_through_a_package_and_a_module_import(tmp_path):
    (tmp_path / "setup.py").write_text("")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "__init__.py").write_text("from .metrics import measure\n")
    (tools / "metrics.py").write_text(HELPERS)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""\
        import tools.metrics as metrics
        from tools import measure


        def main(model, val_loader):
            model.eval()
            first = measure(model, val_loader)
            second = metrics.measure(model, val_loader)
            third = metrics.score(model, val_loader)
            return first, second, third
        """))
    result = lint_source(script.read_text(), str(script), ALL_RULES)
    assert [(d.line, d.code) for d in result.diagnostics] == [(7, "TL101"), (8, "TL101")]


def test_effects_of_functions():
    functions = _top_level_answers(HELPERS, effects)
    assert functions["measure"].forwards == {"net"} and functions["measure"].forward_in_loop
    assert not functions["measure_quietly"].forwards
    assert functions["score"].evaluates_itself and functions["attack"].needs_grad
    plain = _top_level_answers(HELPERS, returns_plain)
    assert functions["batch_loss"].returns_loss and not plain["batch_loss"]
    assert plain["compute_loss"]
    assert functions["loss_and_value"].returned_elements == (frozenset({"<loss>"}), frozenset())
    assert functions["train_step"].retained_backward and functions["train_step"].steps
    assert functions["fit_head"].retained_backward
    assert not functions["attack"].retained_backward


def test_helpers_that_want_gradients_or_share_a_graph_are_left_alone(helpers_project):
    (helpers_project / "pkg" / "more.py").write_text(textwrap.dedent("""\
        import torch
        import torch.nn.functional as F


        def run_epoch(net, batches, opt, train=True):
            for x, y in batches:
                loss = F.cross_entropy(net(x), y)
                if train:
                    loss.backward()
                    opt.step()


        def predict(net, x):
            with torch.inference_mode():
                return net(x)


        def critic_step(critic, real, fake, opt):
            loss = critic(real).mean() - critic(fake).mean()
            loss.backward(retain_graph=True)
            opt.step()


        def generator_step(critic, fake, opt):
            (-critic(fake).mean()).backward()
            opt.step()
        """))
    script = helpers_project / "pkg" / "use.py"
    script.write_text(textwrap.dedent("""\
        from .more import run_epoch, predict, critic_step, generator_step


        def main(model, critic, generator, loader, val_loader, opt_c, opt_g):
            model.eval()
            run_epoch(model, val_loader, None, train=False)
            outs = [predict(model, x) for x, _ in val_loader]
            for real, z in loader:
                fake = generator(z)
                critic_step(critic, real, fake, opt_c)
                generator_step(critic, fake, opt_g)
            return outs
        """))
    result = lint_source(script.read_text(), str(script), ALL_RULES)
    assert [(d.line, d.code) for d in result.diagnostics] == []


def test_a_helper_keeping_the_graph_it_is_handed_is_read_at_each_call(helpers_project):
    (helpers_project / "pkg" / "engine.py").write_text(textwrap.dedent("""\
        def step(loss, opt):
            loss.backward(retain_graph=True)
            opt.step()


        def backward_kept(loss, scale=1.0):
            (loss * scale).backward(retain_graph=True)
        """))
    script = helpers_project / "pkg" / "fit.py"
    script.write_text(textwrap.dedent("""\
        from .engine import step, backward_kept


        def train(model, loader, opt, criterion):
            for x, y in loader:
                opt.zero_grad()
                loss = criterion(model(x), y)
                step(loss, opt)


        def train_two_heads(encoder, head_a, head_b, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                features = encoder(x)
                backward_kept(head_a(features, y))
                backward_kept(head_b(features, y), 0.5)
                opt.step()


        def refine(objective, opt, steps):
            for _ in range(steps):
                opt.zero_grad()
                step(objective, opt)


        def fit_heads(trunk, heads, x, y, opt):
            features = trunk(x)
            for head in heads:
                opt.zero_grad()
                step(head(features, y), opt)
        """))
    functions = _top_level_answers((helpers_project / "pkg" / "engine.py").read_text(), effects)
    assert functions["step"].retained_params == {"loss"} and not functions["step"].retained_backward
    assert functions["backward_kept"].retained_params == {"loss", "scale"}
    result = lint_source(script.read_text(), str(script), ALL_RULES)
    # Only the loss built afresh each iteration with nothing else backpropagating through it:
    # two heads on one trunk, an objective made before the loop, shared features keep theirs.
    assert [(d.line, d.code) for d in result.diagnostics] == [(8, "TL302")]


def test_a_helper_per_batch_counts_where_it_repeats(helpers_project):
    (helpers_project / "pkg" / "per_batch.py").write_text(textwrap.dedent("""\
        def topk_hits(net, x, y, k=5):
            return (net(x).topk(k, 1).indices == y[:, None]).any(1).sum().item()
        """))
    script = helpers_project / "pkg" / "report.py"
    script.write_text(textwrap.dedent("""\
        from .per_batch import topk_hits


        def validate(model, batches):
            hits = 0
            for x, y in batches:
                hits += topk_hits(model, x, y)
            return hits


        def main(model, val_loader, sample):
            for x, y in val_loader:
                print(topk_hits(model, x, y))
            model.eval()
            return topk_hits(model, *sample)
        """))
    result = lint_source(script.read_text(), str(script), ALL_RULES)
    # Once, on one sample (and with ``*sample``, whose arguments cannot be bound): silent.
    assert [(d.line, d.code) for d in result.diagnostics] == [(7, "TL101"), (13, "TL101")]


# -- 0-dim losses returned by another module's function (TL505) -------------------------
def _in_project(tmp_path, **modules) -> None:
    """A project root (a ``setup.py``) holding ``modules``: ``losses=LOSSES`` writes ``losses.py``;
    ``__init__`` makes the root a package."""
    (tmp_path / "setup.py").write_text("")
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)


def _lint_script(tmp_path, name: str, source: str):
    """``source`` written as ``name`` in the project and linted with every rule."""
    script = tmp_path / name
    script.write_text(source)
    return lint_source(source, str(script), ALL_RULES)


LOSSES = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def compute_loss(net, x, y):
    return F.cross_entropy(net(x), y)


def td_loss(q, target, weights):
    loss = (q - target.detach()).pow(2) * weights
    prios = loss + 1e-5
    loss = loss.mean()
    return loss


def per_sample(q, target):
    loss = (q - target).pow(2)
    return loss


def maybe_reduced(q, target, reduce):
    loss = (q - target).pow(2)
    if reduce:
        loss = loss.mean()
    return loss


def unreduced(q, target):
    return nn.MSELoss(reduction="none")(q, target)


def numpy_mean(q):
    return q.detach().numpy().mean()
"""

LEGACY_LOOP = """\
import torch
{imports}


def train(model, loader, optimizer):
    losses = []
    for x, y in loader:
        loss = compute_loss(model, x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.data[0])
        print(td_loss(model(x), y, 1.0).data[0])
        print(per_sample(model(x), y).data[0], maybe_reduced(model(x), y, True).data[0])
        print(unreduced(model(x), y).data[0], numpy_mean(model(x)))
    return losses
"""


@pytest.mark.parametrize("imports", [
    "from losses import compute_loss, td_loss, per_sample, maybe_reduced, unreduced, numpy_mean",
    "from losses import *",
    "from .losses import *",
])
def test_a_loss_returned_by_another_module_is_0_dim(tmp_path, imports):
    _in_project(tmp_path, __init__="", losses=LOSSES)
    result = _lint_script(tmp_path, "train.py", LEGACY_LOOP.format(imports=imports))
    assert {(d.line, d.code) for d in result.diagnostics if d.code == "TL505"} == {(12, "TL505"), (13, "TL505")}
    assert set(result.dependencies) == {str(tmp_path / "losses.py")}


def test_a_loss_of_another_module_is_read_by_the_files_own_definition(tmp_path):
    """The other module's function is asked what a function of the file would be asked, by the
    same definition (``shapes.returns_zero_dim`` on that module's model): a loss that averages
    the module's own helper, and one built from a third module's, are 0-dim; the third module
    counts among what the result depends on."""
    _in_project(tmp_path,
                base="import torch.nn.functional as F\n\n\ndef pair_loss(a, b):\n    return F.mse_loss(a, b)\n",
                losses="import torch.nn.functional as F\nfrom base import pair_loss\n\n\n"
                       "def contrastive(logits, y):\n    return F.cross_entropy(logits, y)\n\n\n"
                       "def symmetric(logits, y):\n"
                       "    return (contrastive(logits, y) + contrastive(logits.T, y)) / 2.0\n\n\n"
                       "def paired(a, b):\n    return pair_loss(a, b) * 0.5\n\n\n"
                       "def rows(a, b):\n    return (a - b).pow(2)\n")
    source = ("import torch\nfrom losses import symmetric, paired, rows\n\n\n"
              "def train(model, loader, optimizer):\n    for x, y in loader:\n"
              "        loss = symmetric(model(x), y)\n        loss.backward()\n        optimizer.step()\n"
              "        print(loss.data[0], paired(model(x), y).data[0], rows(model(x), y).data[0])\n")
    result = _lint_script(tmp_path, "train.py", source)
    assert sorted((d.line, d.col) for d in result.diagnostics if d.code == "TL505") == [(10, 15), (10, 29)]
    assert set(result.dependencies) == {str(tmp_path / "losses.py"), str(tmp_path / "base.py")}


def test_a_star_imported_name_the_file_rebinds_is_its_own(tmp_path):
    _in_project(tmp_path, losses=LOSSES)
    result = _lint_script(tmp_path, "train.py", LEGACY_LOOP.format(
        imports="from losses import *\n\n\ndef compute_loss(net, x, y):\n    return (net(x) - y).pow(2)\n"))
    assert {(d.line, d.code) for d in result.diagnostics if d.code == "TL505"} == {(18, "TL505")}


def test_0_dim_returns_of_another_module_asked_of_its_model(tmp_path):
    _in_project(tmp_path, losses=LOSSES)
    view = view_for(str(tmp_path / "train.py"))
    assert view is not None

    def zero_dim(name):
        function = view.function("losses", 0, name)
        assert function is not None
        return function.ask(returns_zero_dim)

    assert zero_dim("compute_loss") is True and zero_dim("td_loss") is True
    assert not any(zero_dim(name) for name in ("per_sample", "maybe_reduced", "unreduced", "numpy_mean"))
    assert view.function("losses", 0, "nowhere") is None
    assert set(view.consulted) == {str(tmp_path / "losses.py")}


# -- a clipping helper of another module walking a generator twice (TL205) ---------------
CLIPPING = """\
def clip_gradients(parameters, max_norm):
    total = sum(p.grad.data.norm(2) ** 2 for p in parameters) ** 0.5
    coef = max_norm / (total + 1e-6)
    for p in parameters:
        p.grad.data.mul_(min(coef, 1.0))
    return total


def clip_listed(parameters, max_norm):
    parameters = list(parameters)
    total = sum(p.grad.data.norm(2) ** 2 for p in parameters) ** 0.5
    for p in parameters:
        p.grad.data.mul_(min(max_norm / (total + 1e-6), 1.0))
"""

CLIPPED_LOOP = """\
import itertools
{imports}


def train(model, head, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        clip_gradients(model.parameters(), 1.0)
        clip_gradients(itertools.chain(model.parameters(), head.parameters()), max_norm=1.0)
        clip_gradients(list(model.parameters()), 1.0)
        clip_listed(model.parameters(), 1.0)
        optimizer.step()
"""


@pytest.mark.parametrize("imports", ["from utils import clip_gradients, clip_listed", "from utils import *"])
def test_a_helper_of_another_module_that_walks_a_generator_twice(tmp_path, imports):
    _in_project(tmp_path, utils=CLIPPING)
    result = _lint_script(tmp_path, "train.py", CLIPPED_LOOP.format(imports=imports))
    assert {(d.line, d.code) for d in result.diagnostics} == {(9, "TL205"), (10, "TL205")}
    assert set(result.dependencies) == {str(tmp_path / "utils.py")}
    # The fact is the libcst model's, as for a function of the file; the summary only admits.
    assert _top_level_facts(CLIPPING, rewalked) == {"clip_gradients": {"parameters"}, "clip_listed": set()}
    assert all(s.may_rewalk for s in summarize(CLIPPING).functions.values())


# TL103 across modules: eval() matters only for a class with a layer that reads the mode
# (pytorch/examples super_resolution: ``from model import Net``, a Net of convolutions).
SUPER_RESOLUTION = """\
import torch
import torch.nn as nn
from model import {cls} as Net

model = Net(upscale_factor=3).to("cpu")
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def train(loader):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def test(loader):
    with torch.no_grad():
        for x, y in loader:
            prediction = model(x)
            print(criterion(prediction, y).item())


for epoch in range(3):
    train(training_loader)
    test(testing_loader)
"""

MODE_MODELS = """\
import torch
import torch.nn as nn
import torch.nn.init as init
from torchvision import models
from torchvision.models import resnet18


class Trunk(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(1, 1, 3) for _ in range(layers)])
        self.rnn = nn.GRU(4, 4, num_layers=2, dropout=0.0)

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(conv(x))
        return x


class Plain(Trunk):
    def __init__(self, upscale_factor):
        super(Plain, self).__init__(2)
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(1, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        init.orthogonal_(self.conv.weight, init.calculate_gain("relu"))

    def forward(self, x):
        return self.pixel_shuffle(self.conv(super().forward(x)))


class Dropping(Trunk):
    def __init__(self, upscale_factor):
        super().__init__(upscale_factor)
        self.drop = nn.Dropout(0.2)


class Normed(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8))


class Recurrent(nn.Module):
    def __init__(self, upscale_factor, p):
        super().__init__()
        self.rnn = nn.LSTM(4, 4, 2, dropout=p)


class Pretrained(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.features = models.vgg16().features


class Residual(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.trunk = resnet18()


class Switching(nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.conv = nn.Conv2d(1, 1, 3)

    def forward(self, x):
        return self.conv(x) if self.training else x


class Stacked(nn.Module):
    def __init__(self, upscale_factor, layers):
        super().__init__()
        self.body = nn.Sequential(*layers)
"""


@pytest.mark.parametrize("cls, reported", [
    ("Plain", False),  # convolutions, ReLU, PixelShuffle, a base of the module: eval() changes nothing
    ("Dropping", True), ("Normed", True), ("Recurrent", True),  # dropout, batch-norm, a rate we cannot read
    ("Pretrained", True), ("Residual", True),  # a torchvision model inside
    ("Switching", True), ("Stacked", True),  # reads self.training; layers we cannot see
])
def test_tl103_reads_what_an_imported_class_is_built_from(tmp_path, cls, reported):
    _in_project(tmp_path, model=MODE_MODELS)
    result = _lint_script(tmp_path, "main.py", SUPER_RESOLUTION.format(cls=cls))
    assert [(d.line, d.code) for d in result.diagnostics if d.code == "TL103"] == ([(20, "TL103")] if reported else [])
    assert str(tmp_path / "model.py") in result.dependencies  # a changed model.py drops a cached result


def test_mode_free_classes_of_another_module_asked_of_its_model(tmp_path):
    _in_project(tmp_path, model=MODE_MODELS)
    view = view_for(str(tmp_path / "main.py"))
    assert view is not None
    names = [line.split()[1].split("(")[0] for line in MODE_MODELS.splitlines() if line.startswith("class ")]
    assert {name for name in names if view.class_fact("model", 0, name, mode_free_class)} == {"Trunk", "Plain"}
    assert view.class_fact("model", 0, "resnet18", mode_free_class) is None  # imported there, not a class of it


def test_tl103_reads_an_imported_module_attribute_class(tmp_path):
    _in_project(tmp_path, model=MODE_MODELS)
    for cls, expected in (("Plain", []), ("Dropping", [20])):
        source = SUPER_RESOLUTION.replace("from model import {cls} as Net", "import model as models").replace(
            "model = Net(", f"model = models.{cls}(")
        result = _lint_script(tmp_path, "main.py", source)
        assert [d.line for d in result.diagnostics if d.code == "TL103"] == expected


# TL401 across modules: a helper of another module writes a parameter in place; a leaf made,
# built or iterated in the calling file handed to it with grad on raises at the call.
INIT_HELPERS = """\
import torch


def init_(t, scale=1.0):
    t.mul_(scale)
    t[0] = 0


@torch.no_grad()
def init_quietly_(t):
    t.mul_(0.5)


def shrink(t):
    with torch.no_grad():
        t -= 0.1


def normalised(t):
    t = t / t.norm()
    t.clamp_(0)
    return t


def harmless(t):
    t.requires_grad_()
    t.data.add_(1)
"""

INIT_SCRIPT = """\
import torch
import torch.nn as nn
{imports}

w = torch.randn(3, requires_grad=True)
layer = nn.Linear(3, 3)
init_(w, scale=0.1)
init_(t=layer.weight)
for p in layer.parameters():
    init_(p)
init_quietly_(w)
shrink(w)
normalised(w)
harmless(w)
init_(torch.randn(3))
with torch.no_grad():
    init_(layer.bias)


def reset(v):
    init_(v)


reset(w)
"""


def test_one_lint_finds_its_project_once(tmp_path, monkeypatch):
    """The tree gate and the model both ask the project index of a file whose names come from
    a sibling module: they share one view, so the folders above are looked in once a lint."""
    _in_project(tmp_path, helpers=INIT_HELPERS)
    source = INIT_SCRIPT.format(imports="from helpers import harmless, init_, init_quietly_, normalised, shrink")
    script = tmp_path / "init.py"
    script.write_text(source)
    found = []
    real = project_module.view_for
    monkeypatch.setattr(project_module, "view_for", lambda path: found.append(path) or real(path))
    result = lint_source(source, str(script), ALL_RULES)
    assert {(d.line, d.code) for d in result.diagnostics if d.code == "TL401"} == {(7, "TL401"), (8, "TL401"),
                                                                                 (10, "TL401")}
    assert found == [str(script)]


@pytest.mark.parametrize("imports", ["from helpers import harmless, init_, init_quietly_, normalised, shrink",
                                     "from helpers import *"])
def test_a_leaf_handed_to_a_helper_of_another_module_that_writes_it_in_place(tmp_path, imports):
    _in_project(tmp_path, helpers=INIT_HELPERS)
    source = INIT_SCRIPT.format(imports=imports)
    script = tmp_path / "init.py"
    script.write_text(source)
    for gated in (True, False):  # the tree gate asks the project index too, and hides nothing
        result = lint_source(source, str(script), ALL_RULES) if gated else _without_gates_lint(source, str(script))
        assert {(d.line, d.code) for d in result.diagnostics if d.code == "TL401"} == {(7, "TL401"), (8, "TL401"),
                                                                                     (10, "TL401")}
        assert set(result.dependencies) == {str(tmp_path / "helpers.py")}
    assert _top_level_facts(INIT_HELPERS, written_in_place) == {
        "init_": {"t"}, "init_quietly_": set(), "shrink": set(), "normalised": set(), "harmless": set()}
    # Admitted outside ``no_grad`` whatever binds the name later (``harmless`` writes ``t.data``).
    assert {name for name, s in summarize(INIT_HELPERS).functions.items() if s.may_write_in_place} == {
        "init_", "normalised"}


def test_answers_outlive_the_model_and_follow_the_text(tmp_path, monkeypatch):
    """What a call site asked of a module is kept per digest of the module's text: asked again
    after its libcst model was let go, it is not parsed again; a new text is."""
    from torchlint.model import project

    _in_project(tmp_path, helpers=INIT_HELPERS)
    helpers = tmp_path / "helpers.py"
    index = ProjectIndex(tmp_path)
    built = []
    real = project._model_of
    monkeypatch.setattr(project, "_model_of", lambda text, path: built.append(path) or real(text, path))

    def written(name):
        view = project.ProjectView(index, tmp_path / "init.py")
        found = view.function("helpers", 0, name)
        return found.ask(written_in_place), view.consulted

    assert written("init_") == ({"t"}, {str(helpers): index.stamped_summary(helpers)[0]})
    index._models.clear()  # as when eight other modules were asked since
    assert written("init_")[0] == {"t"} and built == [helpers]
    assert written("shrink")[0] == set() and built == [helpers, helpers]  # a new question needs the model
    helpers.write_text(INIT_HELPERS.replace("t.mul_(scale)", "t = t * scale"))
    stamp = helpers.stat()
    os.utime(helpers, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
    assert written("init_")[0] == set() and len(built) == 3


def test_a_file_whose_helper_writes_nothing_in_place_is_not_parsed(tmp_path, monkeypatch):
    # ``normalised`` rebinds ``t`` before its write: the model's question, so it writes nothing either.
    _in_project(tmp_path, helpers=INIT_HELPERS.replace("t.mul_(scale)\n    t[0] = 0", "return t * scale")
                .replace("t.clamp_(0)", "t = t.clamp(0)"))
    source = INIT_SCRIPT.format(imports="from helpers import harmless, init_, init_quietly_, normalised, shrink")
    source = source.replace("with torch.no_grad():\n    init_(layer.bias)\n", "")
    from torchlint import engine

    monkeypatch.setattr(engine, "parse_module", lambda *a, **k: pytest.fail("parsed with libcst"))
    result = lint_source(source, str(tmp_path / "init.py"), [r for r in ALL_RULES if r.code == "TL401"])
    assert result.diagnostics == [] and set(result.dependencies) == {str(tmp_path / "helpers.py")}


def _without_gates_lint(source, path):
    from torchlint.rule import Rule

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(Rule, "may_apply", classmethod(lambda cls, text: True))
        for rule in ALL_RULES:
            patched.setattr(rule, "needs_tree", classmethod(lambda cls, tree_index: True))
        return lint_source(source, path, ALL_RULES)


def _sources_with_functions():
    """Every fixture and corpus file's text, and this module's project helpers."""
    from conftest import CORPUS, FIXTURES

    files = sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))
    return [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in files] + [
        (name, globals()[name]) for name in ("HELPERS", "CLIPPING", "INIT_HELPERS")]


@pytest.mark.parametrize("fact, admission", [
    (lambda m, s: m.derived(effects, s).forwards, "calls_a_parameter"),
    (lambda m, s: m.derived(effects, s).returns_loss, "may_return_loss"),
    (rewalked, "may_rewalk"),
    (written_in_place, "may_write_in_place"),
], ids=["forwards", "returns_loss", "rewalked", "written_in_place"])
def test_the_summary_admits_every_function_its_fact_finds_something_in(fact, admission):
    """The ``ast`` summary is the gate before a module is parsed to be asked: a function it
    does not admit must be one the fact says nothing of, on every fixture and corpus file."""
    import ast

    from torchlint.model.function_summaries import summarize_function

    checked = 0
    for path, source in _sources_with_functions():
        try:
            tree, module = ast.parse(source), cst.parse_module(source)
        except (SyntaxError, ValueError, cst.ParserSyntaxError):
            continue
        model = FileModel(module, path)
        found = {s.name: fact(model, s) for s in model.scopes if s.parent is model.module_scope}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and found.get(node.name):
                checked += 1
                assert getattr(summarize_function(node), admission), f"{path}: {node.name}"
    assert checked >= 3  # the fact finds something somewhere: the check is not empty


# TL611 across modules: a program that calls a project helper whose code decides on its random
# numbers is seeded, by the same reading as a program's own code (``function_effects.seeds``).
SEEDING_HELPERS = """\
import random

import numpy as np
import torch


def fix_everything(value=0):
    random.seed(value)
    np.random.seed(value)
    torch.manual_seed(value)


def make_deterministic():
    torch.use_deterministic_algorithms(True)


def prepare():
    # torch.manual_seed(0)  left out on purpose while tuning
    return None


def log_setup(path):
    return open(path, "w")
"""

SEEDED_PROGRAM = """\
import torch
from torch import nn
from helpers import {helper}

{helper}({argument})
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.ones(8, 4), torch.zeros(8, dtype=torch.long))] * 3:
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
torch.save(model.state_dict(), "model.pt")
"""


@pytest.mark.parametrize("helper, argument, reported", [
    ("fix_everything", "1", False), ("make_deterministic", "", False), ("prepare", "", False),
    ("log_setup", '"log.txt"', True),
])
def test_a_program_seeded_by_a_helper_of_another_module(tmp_path, helper, argument, reported):
    _in_project(tmp_path, helpers=SEEDING_HELPERS)
    source = SEEDED_PROGRAM.format(helper=helper, argument=argument)
    script = tmp_path / "train.py"
    script.write_text(source)
    result = lint_source(source, str(script), [r for r in ALL_RULES if r.code == "TL611"])
    assert [d.line for d in result.diagnostics] == ([12] if reported else [])
    assert set(result.dependencies) == {str(tmp_path / "helpers.py")}


def test_what_a_function_hands_back_follows_what_its_names_are():
    """A call hands on its arguments' graphs when the module's imports make it torch's, however
    spelled (``import torch.nn.functional as fn``), not because its root is named ``F``."""
    found = _top_level_answers(textwrap.dedent("""\
        import torch.nn.functional as fn
        from features import F


        def activated(model, x):
            return fn.relu(model(x))


        def described(model, x):
            return F.describe(model(x))
        """), effects)
    assert found["activated"].returned_outputs == {"model"}
    assert found["described"].returned_outputs == frozenset()


def test_a_switch_to_eval_is_read_as_the_file_reads_it():
    """``modes.mode_switch``'s reading for a function of another module too: ``train(mode=False)``
    switches to eval (a keyword flag), ``session.eval(feed)`` is no module's switch."""
    found = _top_level_answers(textwrap.dedent("""\
        def score(net, batches):
            net.train(mode=False)
            return [net(x) for x in batches]


        def run(net, feed, batches):
            net.eval(feed)
            return [net(x) for x in batches]
        """), effects)
    assert found["score"].evaluates_itself and not found["score"].needs_grad
    assert not found["run"].evaluates_itself


def test_steps_and_backwards_are_read_as_the_file_reads_them():
    """``training_calls``' readings for a function of another module: ``scaler.step(opt)`` steps
    ``opt``; ``torch.autograd.backward(loss)`` is a backward that wants gradients."""
    found = _top_level_answers(textwrap.dedent("""\
        import torch


        def update(loss, scaler, opt):
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()


        def differentiate(loss):
            torch.autograd.backward(loss)


        def act(env, policy, s):
            return env.step(policy(s).argmax().item())
        """), effects)
    assert found["update"].steps and found["update"].needs_grad
    assert found["differentiate"].needs_grad and not found["differentiate"].steps
    assert not found["act"].steps


def test_a_function_that_turns_recording_off_itself_forwards_nothing_with_grad():
    """The mode a function's own code sets (``grad_modes.set_here``): a forward after its own
    ``torch.set_grad_enabled(False)`` records nothing, whoever calls it."""
    found = _top_level_answers(textwrap.dedent("""\
        import torch


        def quiet(net, batches):
            torch.set_grad_enabled(False)
            return [net(x) for x in batches]


        def loud(net, batches):
            return [net(x) for x in batches]
        """), effects)
    assert found["quiet"].forwards == frozenset() and found["loud"].forwards == {"net"}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_module_file_finds_what_python_would_load_inside_the_project(tmp_path):
    from torchlint.buffers import drop_buffer, set_buffer

    proj, elsewhere = tmp_path / "proj", tmp_path / "elsewhere"
    for rel in ("pyproject.toml", "pkg/__init__.py", "pkg/mod.py", "src/lib.py", "app/train.py"):
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text("")
    elsewhere.mkdir()
    (elsewhere / "ext.py").write_text("")
    os.symlink(elsewhere / "ext.py", proj / "app" / "outside.py")
    os.symlink(proj / "pkg" / "mod.py", proj / "app" / "inside.py")
    index, train = ProjectIndex(proj), proj / "app" / "train.py"
    assert index.module_file("pkg.mod", 0, train) == proj / "pkg" / "mod.py"  # from the root
    assert index.module_file("pkg", 0, train) == proj / "pkg" / "__init__.py"
    assert index.module_file("lib", 0, train) == proj / "src" / "lib.py"  # a src/ layout
    assert index.module_file("", 1, proj / "pkg" / "mod.py") == proj / "pkg" / "__init__.py"  # from . import
    assert index.module_file("mod", 2, proj / "pkg" / "sub" / "x.py") == proj / "pkg" / "mod.py"
    assert index.module_file("numpy", 0, train) is None
    assert index.module_file("inside", 0, train) == proj / "app" / "inside.py"
    assert index.module_file("outside", 0, train) is None  # a link out of the project
    unsaved = proj / "app" / "unsaved.py"
    set_buffer(str(unsaved), "x = 1\n")
    try:
        assert index.module_file("unsaved", 0, train) == unsaved  # an editor's new module
    finally:
        drop_buffer(str(unsaved))
    assert index.module_file("unsaved", 0, train) is None
