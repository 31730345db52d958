"""The target torch version: where it comes from, and that every surface lints with it.

Sources, strongest first: ``--target-torch-version`` (flake8's too), the
nearest config's ``target-torch-version``, the lower bound of torch in the
project's pyproject.toml or requirements*.txt, the newest version known.
TL507 shows which target was used: ``torch.load(f)`` is reported only for
targets older than 2.6.
"""
from __future__ import annotations

import json
import os

import pytest
from packaging.specifiers import SpecifierSet

from conftest import run_flake8
from test_cli import write
from torchlint import config as config_mod
from torchlint import declared_torch, runner
from torchlint.cli import main
from torchlint.docs import render
from torchlint.engine import lint_source
from torchlint.rules import RULES_BY_CODE
from torchlint.torch_version import NEWEST_KNOWN

LOADS = """\
import torch


def restore(model, path):
    model.load_state_dict(torch.load(path, map_location="cpu"))
"""
LOAD_LINE = 5


def check(*args, capsys, cache=False):
    code = main(["check", *([] if cache else ["--no-cache"]), *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def tl507_lines(out: str) -> list:
    return [int(line.split(":")[1]) for line in out.splitlines() if " TL507 " in line]


def settings_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("target-torch-version:"))


# -- reading a requirement's lower bound ----------------------------------------------

@pytest.mark.parametrize("specifiers, version", [
    (">=2.1", (2, 1)), ("==2.0.1", (2, 0)), ("~=1.13", (1, 13)), (">2.1", (2, 1)),
    ("<3", None), ("", None), ("!=2.0", None), (">=2.1,<3", (2, 1)), ("==2.1.*", (2, 1)),
    (">=1.8,>=2.0", (2, 0)), (">=2", (2, 0)), ("===2.0.1", (2, 0)),
])
def test_lower_bound_of_a_specifier_set(specifiers, version):
    assert declared_torch.lower_bound(SpecifierSet(specifiers)) == version


# -- the project's own dependencies -------------------------------------------------------

def test_pyproject_dependencies_set_the_target(project, capsys):
    write(project, "pyproject.toml", '[project]\nname = "demo"\ndependencies = ["numpy", "torch>=2.1,<3"]\n')
    write(project, "pkg/train.py", LOADS)
    code, out, _ = check("pkg/train.py", capsys=capsys)
    assert (code, tl507_lines(out)) == (1, [LOAD_LINE])
    out = check("--show-settings", "pkg/train.py", capsys=capsys)[1]
    assert settings_line(out) == f"target-torch-version: 2.1 (from {project / 'pyproject.toml'}: torch>=2.1,<3)"


def test_optional_dependencies_count_and_the_lowest_bound_wins(project, capsys):
    write(project, "pyproject.toml", '[project]\nname = "demo"\ndependencies = ["torch>=2.4"]\n'
                                     '[project.optional-dependencies]\n'
                                     'old = ["torch~=1.13; python_version < \'3.9\'"]\n')
    write(project, "a.py", LOADS)
    out = check("--show-settings", "a.py", capsys=capsys)[1]
    assert settings_line(out).startswith("target-torch-version: 1.13 (from ")


def test_poetry_dependencies_set_the_target(project, capsys):
    write(project, "pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\ntorch = "^2.0"\n')
    write(project, "a.py", LOADS)
    assert settings_line(check("--show-settings", "a.py", capsys=capsys)[1]).startswith(
        "target-torch-version: 2.0 (from ")
    write(project, "pyproject.toml", '[tool.poetry.dependencies]\ntorch = {version = ">=1.12", source = "cu"}\n')
    assert settings_line(check("--show-settings", "a.py", capsys=capsys)[1]).startswith(
        "target-torch-version: 1.12 (from ")


@pytest.mark.parametrize("requirement, shown", [
    ("torch==2.0.1", "2.0"), ("torch~=1.13", "1.13"), ("torch>2.1", "2.1"), ("torch>=2.1", "2.1"),
])
def test_requirements_txt_sets_the_target_where_pyproject_names_no_torch(project, capsys, requirement, shown):
    write(project, "requirements.txt", f"# training\n-r base.txt\nnumpy>=1.24\n{requirement}  # pinned\n")
    write(project, "a.py", LOADS)
    out = check("--show-settings", "a.py", capsys=capsys)[1]
    assert settings_line(out) == (f"target-torch-version: {shown} "
                                  f"(from {project / 'requirements.txt'}: {requirement})")


def test_no_lower_bound_means_the_newest_known(project, capsys):
    write(project, "requirements-dev.txt", "torch<3\n")
    write(project, "a.py", LOADS)
    code, out, _ = check("a.py", capsys=capsys)
    assert (code, tl507_lines(out)) == (0, [])
    out = check("--show-settings", "a.py", capsys=capsys)[1]
    assert settings_line(out) == "target-torch-version: 2.13 (newest known; nothing in the project says)"


def test_the_nearest_project_folder_holds_the_dependencies(tmp_path):
    write(tmp_path, "requirements.txt", "torch>=1.13\n")
    write(tmp_path, "sub/pyproject.toml", '[project]\nname = "inner"\ndependencies = ["torch>=2.2"]\n')
    write(tmp_path, "sub/pkg/a.py", LOADS)
    settings = config_mod.Settings()
    assert settings.resolve(str(tmp_path / "sub" / "pkg" / "a.py")).target_torch == (2, 2)
    assert settings.resolve(str(tmp_path / "b.py")).target_torch == (1, 13)


def test_the_search_stops_at_the_repository_top(tmp_path):
    write(tmp_path, "requirements.txt", "torch>=1.13\n")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    write(tmp_path, "repo/a.py", LOADS)
    assert config_mod.Settings().resolve(str(tmp_path / "repo" / "a.py")).target_torch == NEWEST_KNOWN


def test_isolated_reads_no_dependency_list(project, capsys):
    write(project, "requirements.txt", "torch>=2.1\n")
    write(project, "a.py", LOADS)
    assert tl507_lines(check("--isolated", "a.py", capsys=capsys)[1]) == []
    assert tl507_lines(check("a.py", capsys=capsys)[1]) == [LOAD_LINE]


# -- config files and the command line ----------------------------------------------------

def test_config_value_wins_over_the_dependencies(project, capsys):
    write(project, "pyproject.toml", '[project]\nname = "demo"\ndependencies = ["torch>=2.1"]\n'
                                     '[tool.torchlint]\ntarget-torch-version = "2.6"\n')
    write(project, "a.py", LOADS)
    assert tl507_lines(check("a.py", capsys=capsys)[1]) == []
    out = check("--show-settings", "a.py", capsys=capsys)[1]
    assert settings_line(out) == f"target-torch-version: 2.6 (from {project / 'pyproject.toml'}: target-torch-version)"


def test_the_nearest_config_applies_per_file(project, capsys):
    write(project, "old/torchlint.toml", 'target-torch-version = "2.1.2"\n')
    write(project, "old/a.py", LOADS)
    write(project, "new/a.py", LOADS)
    out = check(".", capsys=capsys)[1]
    assert [line.split(":")[0] for line in out.splitlines() if " TL507 " in line] == [os.path.join("old", "a.py")]


def test_an_extending_config_inherits_the_target(project):
    write(project, "base.toml", 'target-torch-version = "1.13"\n')
    write(project, "sub/.torchlint.toml", 'extend = "../base.toml"\nignore = ["TL301"]\n')
    resolved = config_mod.Settings().resolve(str(project / "sub" / "a.py"))
    assert resolved.target_torch == (1, 13) and resolved.target_origin.endswith("base.toml: target-torch-version")


def test_command_line_wins_over_the_config(project, capsys):
    write(project, "torchlint.toml", 'target-torch-version = "2.6"\n')
    write(project, "a.py", LOADS)
    code, out, _ = check("--target-torch-version", "2.1", "a.py", capsys=capsys)
    assert (code, tl507_lines(out)) == (1, [LOAD_LINE])
    out = check("--target-torch-version", "2.1", "--show-settings", "a.py", capsys=capsys)[1]
    assert settings_line(out) == "target-torch-version: 2.1 (from --target-torch-version)"


@pytest.mark.parametrize("value, shown", [('"latest"', "'latest'"), ('"2"', "'2'"), ("2.1", "2.1"),
                                          ('["2.1"]', "['2.1']"), ('"2.x"', "'2.x'")])
def test_an_invalid_config_value_is_one_clear_line(project, capsys, value, shown):
    write(project, "torchlint.toml", f"target-torch-version = {value}\n")
    write(project, "a.py", LOADS)
    code, out, err = check("a.py", capsys=capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"torchlint: error: {project / 'torchlint.toml'}: target-torch-version: "
                          f"expected a torch version such as \"2.1\", got {shown}")
    assert err.count("\n") == 1
    if value == "2.1":
        assert "quote it" in err


def test_an_invalid_command_line_value_is_one_clear_line(project, capsys):
    write(project, "a.py", LOADS)
    code, out, err = check("--target-torch-version", "two", "a.py", capsys=capsys)
    assert (code, out) == (2, "")
    assert err == "torchlint: error: --target-torch-version: expected a torch version such as \"2.1\", got 'two'\n"


def test_the_misspelt_key_is_suggested(project, capsys):
    write(project, "torchlint.toml", 'target_torch_version = "2.1"\n')
    err = check(".", capsys=capsys)[2]
    assert "did you mean 'target-torch-version'?" in err


# -- the same target on every path -----------------------------------------------------------

def test_a_changed_target_does_not_reuse_cached_findings(project, capsys):
    write(project, "a.py", LOADS)
    assert tl507_lines(check("a.py", capsys=capsys, cache=True)[1]) == []
    assert tl507_lines(check("--target-torch-version", "2.1", "a.py", capsys=capsys, cache=True)[1]) == [LOAD_LINE]
    assert tl507_lines(check("a.py", capsys=capsys, cache=True)[1]) == []
    write(project, "requirements.txt", "torch>=2.0\n")  # the project's own change, no config touched
    assert tl507_lines(check("a.py", capsys=capsys, cache=True)[1]) == [LOAD_LINE]


def test_cache_keys_differ_by_target():
    codes = ("TL507",)
    keys = {runner._key("a.py", "0" * 64, codes, target) for target in (None, (2, 1), (2, 6))}
    assert len(keys) == 3


def test_fix_lints_with_the_target_of_the_check(project, capsys):
    write(project, "requirements.txt", "torch>=2.1\n")
    path = write(project, "a.py", LOADS)
    code, out, _ = check("--fix", "--unsafe-fixes", "a.py", capsys=capsys)
    assert code == 0, out
    assert 'torch.load(path, map_location="cpu", weights_only=True)' in path.read_text()


def test_stdin_fix_uses_the_target_of_its_name(project, capsys, monkeypatch):
    import io
    import sys

    write(project, "torchlint.toml", 'target-torch-version = "2.1"\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LOADS.encode())))
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", "--stdin-filename", "a.py", "-"])
    assert "weights_only=True" in capsys.readouterr().out


def test_notebooks_are_linted_and_fixed_for_the_target(project, capsys):
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": LOADS.splitlines(keepends=True)}
    path = write(project, "nb.ipynb", json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                  "nbformat_minor": 5}))
    assert tl507_lines(check("nb.ipynb", capsys=capsys)[1]) == []
    out = check("--target-torch-version", "2.0", "nb.ipynb", capsys=capsys)[1]
    assert any(" TL507 " in line for line in out.splitlines())
    code, out, _ = check("--target-torch-version", "2.0", "--fix", "--unsafe-fixes", "nb.ipynb", capsys=capsys)
    assert code == 0, out
    assert "weights_only=True" in "".join(json.loads(path.read_text())["cells"][0]["source"])


def test_the_language_server_lints_for_the_target(project):
    pytest.importorskip("pygls")
    from torchlint import server

    write(project, "requirements.txt", "torch>=2.1\n")
    path = str(write(project, "a.py", LOADS))
    server.CONFIGS.forget()
    assert [(d.line, d.code) for d in server.lint_document(path, LOADS)] == [(LOAD_LINE, "TL507")]
    assert server._fixed_text(path, LOADS, "TL507", (LOAD_LINE, 27), unsafe=True).count("weights_only=True") == 1
    assert server._is_config("file:///w/requirements-dev.txt")


# -- flake8 -------------------------------------------------------------------------------

def test_flake8_option_sets_the_target(project):
    path = write(project, "a.py", LOADS)
    assert " TL507 " not in run_flake8("--select=TL", path).stdout
    proc = run_flake8("--select=TL", "--target-torch-version=2.1", path)
    assert f"a.py:{LOAD_LINE}:27: TL507 " in proc.stdout, proc.stderr


def test_flake8_finds_the_projects_torch_requirement(project):
    write(project, "requirements.txt", "torch>=2.1\n")
    path = write(project, "a.py", LOADS)
    assert f"a.py:{LOAD_LINE}:27: TL507 " in run_flake8("--select=TL", path).stdout


def test_flake8_invalid_value_stops_the_run_with_its_message(project):
    path = write(project, "a.py", LOADS)
    proc = run_flake8("--select=TL", "--target-torch-version=newest", path)
    assert proc.returncode != 0
    assert "torchlint: flake8 --target-torch-version: expected a torch version" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


# -- rules that follow the target --------------------------------------------------------

def _codes(source: str, code: str, target) -> list:
    result = lint_source(source, "train.py", [RULES_BY_CODE[code]], target_torch=target)
    return [d.line for d in result.diagnostics if d.code == code]


def test_tl105_is_silent_before_volatile_became_a_no_op():
    source = "import torch\nfrom torch.autograd import Variable\n\nx = Variable(torch.ones(2), volatile=True)\n"
    assert _codes(source, "TL105", (0, 3)) == []
    assert _codes(source, "TL105", (0, 4)) == [4]
    assert _codes(source, "TL105", None) == [4]


def test_tl501_is_silent_where_use_reentrant_does_not_exist():
    source = ("import torch\nfrom torch.utils.checkpoint import checkpoint, checkpoint_sequential\n\n\n"
              "def forward(block, layers, x):\n    x = checkpoint(block, x)\n"
              "    return checkpoint_sequential(layers, 2, x)\n")
    assert _codes(source, "TL501", (1, 10)) == []
    assert _codes(source, "TL501", (1, 13)) == [6]
    assert _codes(source, "TL501", (2, 0)) == [6, 7]


def test_tl507_follows_the_target():
    explicit = "import torch\n\nstate = torch.load('m.pt', weights_only=False)\n"
    assert _codes(LOADS, "TL507", (2, 5)) == [LOAD_LINE]
    assert _codes(LOADS, "TL507", (2, 6)) == []
    assert _codes(LOADS, "TL507", (1, 12)) == []  # no weights_only to pass yet
    for target in ((1, 12), (2, 1), (2, 6), None):
        assert _codes(explicit, "TL507", target) == [3]


def test_rule_pages_say_how_the_target_changes_them():
    assert "## Torch version\n`weights_only` arrived in PyTorch 1.13" in render(RULES_BY_CODE["TL507"])
    assert "## Torch version\nThe target torch version" in render(RULES_BY_CODE["TL301"])
    assert "does not change" in render(RULES_BY_CODE["TL301"])
