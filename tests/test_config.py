"""Configuration: one resolver (config.Settings) decides each file's codes, the same on every surface.

The semantics tested here are documented in docs/configuration.md.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli, run_flake8
from torchlint import config as config_mod
from torchlint.cli import main
from torchlint.rules import DEFAULT_CODES

# TL301 on line 11 (fix: loss.detach()), TL101 on line 19 (fix: wrap in no_grad).
TWO_FAMILIES = """\
import torch


def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses


def evaluate(model, loader):
    model.eval()
    outs = []
    for x in loader:
        outs.append(model(x).argmax(1))
    return outs
"""
BOTH = {(11, "TL301"), (19, "TL101")}
TL7 = {"TL701", "TL702", "TL703", "TL704", "TL705"}  # the opt-in TorchFix-parity family
OPT_IN = {"TL106", "TL601"} | TL7


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def codes(tmp_path, select=None, extend_select=(), ignore=()) -> frozenset:
    """The codes the command line's options resolve to for a file with no config around it."""
    overrides = config_mod.command_line(select, extend_select, ignore)
    return config_mod.Settings(overrides).codes_for(str(tmp_path / "x.py"))


def findings(out: str) -> dict:
    """{path relative to cwd, "/"-separated: {(line, code)}} from ``--output-format json``."""
    found: dict = {}
    for d in json.loads(out):
        found.setdefault(Path(d["path"]).as_posix(), set()).add((d["line"], d["code"]))
    return found


def check_json(*args, capsys) -> tuple:
    code = main(["check", "--no-cache", "--output-format", "json", *map(str, args)])
    out, err = capsys.readouterr()
    return code, (findings(out) if code in (0, 1) else err)


# -- selector semantics ------------------------------------------------------------

@pytest.mark.parametrize("select, ignore, on, off", [
    (["TL101"], ["TL1"], {"TL101"}, {"TL102", "TL301"}),  # the more specific select wins
    (["TL1"], ["TL101"], {"TL102", "TL105"}, {"TL101", "TL301"}),  # the more specific ignore wins
    (["TL3"], ["TL30"], set(), {"TL301", "TL302", "TL303", "TL101"}),
    (["ALL"], ["TL3"], {"TL101", "TL201"}, {"TL301", "TL302"}),
    (["TL30"], ["TL"], {"TL301", "TL302"}, {"TL101", "TL201"}),
])
def test_the_more_specific_selector_wins(tmp_path, select, ignore, on, off):
    found = codes(tmp_path, select=select, ignore=ignore)
    assert on <= found and not (off & found), sorted(found)


def test_on_equal_specificity_ignore_wins():
    # The CLI and config refuse the same selector in both lists; flake8's options may hold it.
    layer = config_mod.Selection(select=("TL301", "TL1"), ignore=("TL301",))
    assert "TL301" not in layer.apply(frozenset())
    assert "TL101" in layer.apply(frozenset())


def test_same_selector_in_select_and_ignore_is_refused_per_layer(tmp_path):
    with pytest.raises(config_mod.ConfigError, match="--select and --ignore both name TL301"):
        codes(tmp_path, select=["TL301"], ignore=["tl301"])


@pytest.mark.parametrize("select, extend, named", [
    (["TL"], [], set()),
    (["ALL"], [], set()),
    (None, ["TL"], set()),
    (["TL1"], [], {"TL106"}),
    (["TL10"], [], {"TL106"}),
    (["TL106"], [], {"TL106"}),
    (None, ["TL6"], {"TL601"}),
    (["ALL"], ["TL106", "TL601"], {"TL106", "TL601"}),
    (["TL7"], [], TL7),
    (None, ["TL7"], TL7),
    (None, ["TL70"], TL7),
    (None, ["TL704"], {"TL704"}),
    (["TL7"], ["TL106"], TL7 | {"TL106"}),
])
def test_opt_in_rules_run_only_when_named(tmp_path, select, extend, named):
    assert codes(tmp_path, select=select, extend_select=extend) & OPT_IN == named


def test_defaults_are_the_default_rules_and_the_status_codes(tmp_path):
    assert codes(tmp_path) == DEFAULT_CODES | {"TL001", "TL002"}
    assert codes(tmp_path, select=["TL301"]) == {"TL301", "TL001", "TL002"}
    assert "TL001" not in codes(tmp_path, ignore=["TL001"])


def test_ignoring_tl001_hides_syntax_errors(project, capsys):
    write(project, "broken.py", "for x in loader:\n    f(\n")
    code, found = check_json("broken.py", capsys=capsys)
    assert code == 1 and {c for _, c in found["broken.py"]} == {"TL001"}
    assert check_json("--ignore", "TL001", "broken.py", capsys=capsys) == (0, {})


def test_command_line_layers_over_the_config_as_in_ruff(project, capsys):
    write(project, "pyproject.toml", '[tool.torchlint]\nselect = ["TL3"]\nignore = ["TL302"]\n')
    write(project, "t.py", TWO_FAMILIES)
    assert check_json("t.py", capsys=capsys) == (1, {"t.py": {(11, "TL301")}})
    # --extend-select and --ignore add to the config's selection ...
    assert check_json("--extend-select", "TL101", "t.py", capsys=capsys) == (1, {"t.py": BOTH})
    assert check_json("--ignore", "TL3", "t.py", capsys=capsys) == (0, {})
    # ... --select starts over (the config's ignore of TL302 no longer applies either).
    assert check_json("--select", "TL1", "t.py", capsys=capsys) == (1, {"t.py": {(19, "TL101")}})
    settings = config_mod.Settings(config_mod.command_line(["TL30"], (), ()))
    assert "TL302" in settings.codes_for(str(project / "t.py"))


def test_command_line_ignore_of_a_config_select_is_no_clash(project, capsys):
    write(project, "pyproject.toml", '[tool.torchlint]\nselect = ["TL301"]\n')
    write(project, "t.py", TWO_FAMILIES)
    assert check_json("--ignore", "TL301", "t.py", capsys=capsys) == (0, {})


# -- which config applies -----------------------------------------------------------

def test_a_nested_config_applies_to_its_folder_only(project, capsys):
    write(project, "pyproject.toml", '[tool.torchlint]\nignore = ["TL101"]\n')
    write(project, "sub/pyproject.toml", '[tool.torchlint]\nselect = ["TL1"]\n')
    for name in ("t.py", "sub/t.py", "sub/deeper/t.py", "other/t.py"):
        write(project, name, TWO_FAMILIES)
    code, found = check_json(".", capsys=capsys)
    assert found == {"t.py": {(11, "TL301")}, "other/t.py": {(11, "TL301")},
                     "sub/t.py": {(19, "TL101")}, "sub/deeper/t.py": {(19, "TL101")}}


def test_the_working_directory_does_not_change_a_files_config(project, capsys, monkeypatch):
    write(project, "pyproject.toml", '[tool.torchlint]\nignore = ["TL101"]\n')
    write(project, "sub/torchlint.toml", 'select = ["TL1"]\n')
    write(project, "t.py", TWO_FAMILIES)
    write(project, "sub/t.py", TWO_FAMILIES)
    monkeypatch.chdir(project / "sub")
    code, found = check_json("t.py", "../t.py", capsys=capsys)
    assert found == {"t.py": {(19, "TL101")}, "../t.py": {(11, "TL301")}}


def test_a_pyproject_without_torchlint_table_does_not_stop_the_lookup(project, capsys):
    write(project, "pyproject.toml", '[tool.torchlint]\nignore = ["TL101"]\n')
    write(project, "pkg/pyproject.toml", '[project]\nname = "pkg"\n')
    write(project, "pkg/t.py", TWO_FAMILIES)
    assert check_json("pkg/t.py", capsys=capsys) == (1, {"pkg/t.py": {(11, "TL301")}})


@pytest.mark.parametrize("present, wins", [
    ((".torchlint.toml", "torchlint.toml", "pyproject.toml"), ".torchlint.toml"),
    (("torchlint.toml", "pyproject.toml"), "torchlint.toml"),
    (("pyproject.toml",), "pyproject.toml"),
])
def test_precedence_within_one_folder(project, present, wins):
    select = {".torchlint.toml": "TL301", "torchlint.toml": "TL302", "pyproject.toml": "TL303"}
    for name in present:
        text = f'select = ["{select[name]}"]\n'
        write(project, name, "[tool.torchlint]\n" + text if name == "pyproject.toml" else text)
    resolved = config_mod.Settings().resolve(str(project / "t.py"))
    assert resolved.config.source.name == wins
    assert resolved.codes - {"TL001", "TL002"} == {select[wins]}


def test_torchlint_toml_keys_are_top_level_and_checked(project, capsys):
    write(project, "torchlint.toml", 'ignore = ["TL301"]\nper-file-ignores = { "scripts/*" = ["TL101"] }\n')
    write(project, "scripts/t.py", TWO_FAMILIES)
    assert check_json("scripts/t.py", capsys=capsys) == (0, {})
    write(project, "torchlint.toml", "[tool.torchlint]\nignore = []\n")
    code, err = check_json("scripts/t.py", capsys=capsys)
    assert code == 2 and "torchlint.toml: unknown option 'tool'" in err


def test_paths_are_relative_to_the_config_that_declares_them(project, capsys):
    write(project, "sub/torchlint.toml",
          'exclude = ["generated"]\nper-file-ignores = { "scripts/*" = ["TL301"] }\n')
    for name in ("scripts/t.py", "generated/t.py", "sub/scripts/t.py", "sub/generated/t.py", "sub/t.py"):
        write(project, name, TWO_FAMILIES)
    code, found = check_json(".", capsys=capsys)
    assert found == {"scripts/t.py": BOTH, "generated/t.py": BOTH,  # no config applies up here
                     "sub/scripts/t.py": {(19, "TL101")}, "sub/t.py": BOTH}


def test_exclude_of_a_nested_config_prunes_discovery_there_only(project):
    write(project, "torchlint.toml", 'exclude = ["vendored"]\n')
    write(project, "lib/torchlint.toml", 'exclude = ["cache"]\n')
    for name in ("vendored/a.py", "cache/a.py", "lib/cache/a.py", "lib/vendored/a.py", "lib/a.py"):
        write(project, name, "")
    from torchlint.discover import discover

    files, _ = discover(["."], config_mod.Settings())
    # lib/'s config replaces the outer one there: "vendored" is not excluded under lib/.
    assert sorted(Path(f).as_posix() for f in files) == ["cache/a.py", "lib/a.py", "lib/vendored/a.py"]


def test_config_option_applies_to_every_file(project, capsys, monkeypatch):
    write(project, "sub/pyproject.toml", '[tool.torchlint]\nselect = ["TL1"]\n')
    write(project, "strict.toml", 'select = ["TL3"]\nper-file-ignores = { "sub/*" = ["TL301"] }\n')
    write(project, "t.py", TWO_FAMILIES)
    write(project, "sub/t.py", TWO_FAMILIES)
    write(project, "sub/deeper/t.py", TWO_FAMILIES)
    monkeypatch.chdir(project / "sub")
    code, found = check_json("--config", "../strict.toml", ".", "../t.py", capsys=capsys)
    # sub/pyproject.toml is not read (it would report TL101); "sub/*" is relative to
    # strict.toml's folder, not to the working directory, and "*" crosses folders.
    assert found == {"../t.py": {(11, "TL301")}}


def test_a_broken_nested_config_is_a_usage_error_naming_it(project, capsys):
    write(project, "sub/pyproject.toml", '[tool.torchlint]\nignore = ["TL99"]\n')
    write(project, "sub/t.py", TWO_FAMILIES)
    code, err = check_json(".", capsys=capsys)
    assert code == 2 and "Traceback" not in err
    assert err.startswith("torchlint: error: ") and "pyproject.toml: [tool.torchlint] ignore: unknown rule code 'TL99'" in err


def test_configs_are_read_once_per_folder(project, monkeypatch):
    write(project, "torchlint.toml", 'ignore = ["TL101"]\n')
    for index in range(5):
        write(project, f"pkg/m{index}.py", "")
    reads = []
    real = config_mod._read_toml
    monkeypatch.setattr(config_mod, "_read_toml", lambda path: reads.append(path) or real(path))
    settings = config_mod.Settings()
    for index in range(5):
        settings.resolve(str(project / f"pkg/m{index}.py"))
    settings.resolve(str(project / "top.py"))
    assert [p.name for p in reads] == ["torchlint.toml"]


def test_cache_root_is_the_folder_of_the_config_for_the_working_directory(project, monkeypatch):
    assert config_mod.Settings().cache_root() == project  # no torchlint config: the cwd
    write(project, "torchlint.toml", "")
    write(project, "sub/x.py", "")
    monkeypatch.chdir(project / "sub")
    assert config_mod.Settings().cache_root() == project


# -- the same findings on every surface ------------------------------------------------

@pytest.fixture
def nested(project):
    """Root config ignores TL101; sub/'s selects TL1 only: t.py shows TL301, sub/t.py TL101."""
    write(project, "pyproject.toml", '[tool.torchlint]\nignore = ["TL101"]\n')
    write(project, "sub/pyproject.toml", '[tool.torchlint]\nselect = ["TL1"]\n')
    return write(project, "t.py", TWO_FAMILIES), write(project, "sub/t.py", TWO_FAMILIES)


EXPECTED = {"t.py": {(11, "TL301")}, "sub/t.py": {(19, "TL101")}}


def test_cli_fix_diff_server_and_flake8_agree(nested, project, capsys):
    from torchlint.server import lint_document

    cli = check_json("t.py", "sub/t.py", capsys=capsys)[1]
    server = {name: {(d.line, d.code) for d in lint_document(str(project / name), TWO_FAMILIES)}
              for name in EXPECTED}
    flake8 = run_flake8("t.py", "sub/t.py", cwd=project).stdout  # no --select: the configs decide
    found_by_flake8: dict = {}
    for line in flake8.splitlines():
        match = re.match(r"(?P<path>[^:]+):(?P<line>\d+):\d+: (?P<code>TL\d+) ", line)
        if match:
            found_by_flake8.setdefault(match["path"], set()).add((int(match["line"]), match["code"]))
    assert cli == server == found_by_flake8 == EXPECTED

    # --diff fixes exactly what each file reports: t.py's stored loss, sub/t.py's evaluation.
    assert main(["check", "--no-cache", "--diff", "--unsafe-fixes", "t.py", "sub/t.py"]) == 1
    diff = capsys.readouterr().out
    root_part, sub_part = diff.split("--- a/sub/t.py")
    assert "+        losses.append(loss.detach())" in root_part and "no_grad" not in root_part
    assert "+    with torch.no_grad():" in sub_part and "detach" not in sub_part


def test_fix_writes_what_the_files_config_selects(nested, project, capsys):
    root, sub = nested
    code = main(["check", "--no-cache", "--fix", "--unsafe-fixes", "t.py", "sub/t.py"])
    capsys.readouterr()
    assert code == 0
    assert "loss.detach()" in root.read_text() and "no_grad" not in root.read_text()
    assert "torch.no_grad()" in sub.read_text() and "detach" not in sub.read_text()


def test_stdin_uses_the_config_nearest_its_name(nested, project):
    proc = run_cli("check", "--stdin-filename", "sub/t.py", "-", cwd=project, stdin=TWO_FAMILIES)
    assert proc.returncode == 1 and ":19:" in proc.stdout and ":11:" not in proc.stdout


def test_flake8_options_naming_tl_codes_override_the_config(nested, project):
    proc = run_flake8("--select=TL101", "t.py", "sub/t.py", cwd=project)
    assert sorted(line.split(": ")[0] for line in proc.stdout.splitlines()) == [
        "sub/t.py:19:21", "t.py:19:21"]  # the root config's ignore gave way to flake8's select
    proc = run_flake8("--extend-ignore=TL1", "sub/t.py", cwd=project)
    assert "TL" not in proc.stdout


def test_flake8_layer_reads_only_selectors_that_cover_tl_codes():
    from types import SimpleNamespace

    from torchlint.flake8_plugin import flake8_layer

    def layer(select=None, extend_select=None, ignore=None, extend_ignore=None):
        return flake8_layer(SimpleNamespace(select=select, extend_select=extend_select,
                                            ignore=ignore, extend_ignore=extend_ignore))

    assert layer() is None and layer(ignore=["E501", "W"]) is None
    assert layer(select=["E", "W"]).select == ()  # flake8 shows no TL finding: run nothing
    # TL (or T, which flake8's prefix match makes cover TL101) only switches the plugin on.
    assert layer(select=["E", "T"]) is None and layer(select=["TL"], extend_select=["TL"]) is None
    assert layer(select=["TL", "TL106"]) == config_mod.Selection(extend_select=("TL106",), where="flake8 --")
    assert layer(select=["TL99", "TL3"]).select == ("TL3",)
    assert layer(extend_select=["TL106"], extend_ignore=["TL1"]).ignore == ("TL1",)
    assert layer(ignore=["T"]).ignore == ("TL",)


def test_flake8_select_tl_keeps_the_config(nested, project):
    # setup.cfg's "select = E,F,W,TL" must not undo [tool.torchlint]: the same findings as the CLI.
    proc = run_flake8("--select=E,TL", "t.py", "sub/t.py", cwd=project)
    assert sorted(line.split(": ")[0] for line in proc.stdout.splitlines()) == [
        "sub/t.py:19:21", "t.py:11:9"]


def test_flake8_runs_opt_in_rules_the_config_selects(project):
    bad = Path(__file__).resolve().parent.parent / "fixtures"
    source = next(bad.glob("TL106_*")) / "bad.py"
    write(project, "serve.py", source.read_text())
    assert "TL106" not in run_flake8("serve.py", cwd=project).stdout
    write(project, "pyproject.toml", '[tool.torchlint]\nextend-select = ["TL106"]\n')
    assert "TL106" in run_flake8("serve.py", cwd=project).stdout


def test_flake8_reports_a_broken_config_without_a_traceback(project):
    write(project, "pyproject.toml", '[tool.torchlint]\nselect = ["TL99"]\n')
    write(project, "t.py", TWO_FAMILIES)
    proc = run_flake8("t.py", cwd=project)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert "[tool.torchlint] select: unknown rule code 'TL99'" in proc.stdout


def test_flake8_honours_the_configs_exclude(project):
    write(project, "torchlint.toml", 'exclude = ["generated"]\n')
    write(project, "generated/t.py", TWO_FAMILIES)
    assert "TL" not in run_flake8("generated/t.py", cwd=project).stdout
