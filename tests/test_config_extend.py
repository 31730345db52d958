"""``extend``: a config file layered on top of the one it names, as ruff layers them.

Documented in docs/configuration.md ("Extending another config").
"""
from __future__ import annotations

import pytest

from test_config import BOTH, TWO_FAMILIES, check_json, write
from torchlint import config as config_mod
from torchlint.cli import main


def resolve(path) -> config_mod.FileSettings:
    return config_mod.Settings().resolve(str(path))


PARENT = """\
[tool.torchlint]
extend-select = ["TL106"]
ignore = ["TL302"]
per-file-ignores = { "sub/tests/*" = ["TL101"] }
exclude = ["sub/generated"]
"""


@pytest.fixture
def layered(project):
    (project / "pyproject.toml").write_text(PARENT)
    return project


def test_the_extending_file_adds_its_ignores_to_the_selection_it_extends(layered):
    write(layered, "sub/torchlint.toml", 'extend = "../pyproject.toml"\nignore = ["TL301"]\n')
    codes = resolve(layered / "sub" / "x.py").codes
    assert "TL106" in codes  # the parent's extend-select still holds
    assert "TL302" not in codes and "TL301" not in codes  # both files' ignores
    assert "TL101" in codes


def test_a_select_in_the_extending_file_starts_over(layered):
    write(layered, "sub/torchlint.toml", 'extend = "../pyproject.toml"\nselect = ["TL3"]\n')
    codes = resolve(layered / "sub" / "x.py").codes
    assert "TL302" in codes and "TL301" in codes  # the parent's ignore is replaced with the rest
    assert "TL101" not in codes and "TL106" not in codes


def test_inherited_patterns_stay_relative_to_the_extended_file(layered):
    write(layered, "sub/torchlint.toml", 'extend = "../pyproject.toml"\n')
    settings = config_mod.Settings()
    assert "TL101" not in settings.resolve(str(layered / "sub" / "tests" / "t.py")).codes
    assert "TL101" in settings.resolve(str(layered / "sub" / "t.py")).codes
    assert settings.resolve(str(layered / "sub" / "generated" / "g.py")).excluded


def test_the_extending_files_own_per_file_ignores_and_exclude_replace_the_inherited(layered):
    write(layered, "sub/torchlint.toml",
          'extend = "../pyproject.toml"\nexclude = []\nper-file-ignores = { "other/*" = ["TL301"] }\n')
    settings = config_mod.Settings()
    assert "TL101" in settings.resolve(str(layered / "sub" / "tests" / "t.py")).codes
    assert "TL301" not in settings.resolve(str(layered / "sub" / "other" / "o.py")).codes
    assert not settings.resolve(str(layered / "sub" / "generated" / "g.py")).excluded


def test_extend_chains_through_several_files(project):
    write(project, "base.toml", 'ignore = ["TL101"]\n')
    write(project, "mid/torchlint.toml", 'extend = "../base.toml"\nextend-select = ["TL601"]\n')
    write(project, "mid/leaf/.torchlint.toml", 'extend = "../torchlint.toml"\nignore = ["TL301"]\n')
    codes = resolve(project / "mid" / "leaf" / "x.py").codes
    assert "TL601" in codes and not {"TL101", "TL301"} & codes


@pytest.mark.parametrize("files, message", [
    ({"a.toml": 'extend = "b.toml"\n', "b.toml": 'extend = "a.toml"\n'}, "cycle"),
    ({"a.toml": 'extend = "a.toml"\n'}, "cycle"),
    ({"a.toml": 'extend = "missing.toml"\n'}, "missing.toml does not exist"),
    ({"a.toml": 'extend = ["b.toml"]\n'}, "expected the path of a config file"),
    ({"a.toml": 'extend = "pyproject.toml"\n'}, "has no [tool.torchlint] table"),
])
def test_a_broken_extend_is_a_clear_error_naming_the_files(project, capsys, files, message):
    for name, text in files.items():
        write(project, name, text)
    write(project, "x.py", "x = 1\n")
    assert main(["check", "--no-cache", "--config", "a.toml", "x.py"]) == 2
    err = capsys.readouterr().err
    assert message in err and "a.toml" in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_a_cycle_names_each_file_in_it(project, capsys):
    write(project, "a.toml", 'extend = "sub/b.toml"\n')
    write(project, "sub/b.toml", 'extend = "../a.toml"\n')
    write(project, "x.py", "x = 1\n")
    assert main(["check", "--no-cache", "--config", "a.toml", "x.py"]) == 2
    err = capsys.readouterr().err
    assert f"{project / 'a.toml'} -> {project / 'sub' / 'b.toml'} -> {project / 'a.toml'}" in err


def test_every_surface_sees_the_extended_settings(layered, capsys):
    from torchlint.server import lint_document

    write(layered, "sub/torchlint.toml", 'extend = "../pyproject.toml"\nignore = ["TL301"]\n')
    write(layered, "sub/tests/t.py", TWO_FAMILIES)  # TL101 ignored by the parent's per-file-ignores
    write(layered, "sub/t.py", TWO_FAMILIES)
    code, found = check_json("sub", capsys=capsys)
    assert found == {"sub/t.py": {c for c in BOTH if c[1] == "TL101"}}
    for name in ("sub/t.py", "sub/tests/t.py"):
        server = {(d.line, d.code) for d in lint_document(str(layered / name), TWO_FAMILIES)}
        assert server == found.get(name, set())


def test_extend_per_file_ignores_add_to_the_inherited_ones_each_relative_to_its_file(layered):
    write(layered, "sub/torchlint.toml",
          'extend = "../pyproject.toml"\nextend-per-file-ignores = { "tests/*" = ["TL301"] }\n')
    codes = resolve(layered / "sub" / "tests" / "t.py").codes
    assert not {"TL101", "TL301"} & codes  # the parent's "sub/tests/*" and this file's "tests/*"
    assert {"TL101", "TL301"} <= resolve(layered / "sub" / "t.py").codes


def test_extend_per_file_ignores_without_extend_are_per_file_ignores(project):
    write(project, "torchlint.toml", 'extend-per-file-ignores = { "gen/*" = ["TL301"] }\n')
    assert "TL301" not in resolve(project / "gen" / "g.py").codes
    assert "TL301" in resolve(project / "g.py").codes


def _chain(folder, length: int):
    """c0.toml extends c1.toml ... up to c{length-1}.toml, which extends nothing."""
    for index in range(length):
        line = f'extend = "c{index + 1}.toml"\n' if index < length - 1 else ""
        (folder / f"c{index}.toml").write_text(line + 'ignore = ["TL302"]\n')
    return folder / "c0.toml"


def test_a_chain_of_extends_up_to_the_limit_is_followed(project, capsys):
    first = _chain(project, config_mod.MAX_EXTEND_CHAIN)
    write(project, "a.py", "x = 1\n")
    assert main(["check", "--no-cache", "--config", str(first), "a.py"]) == 0, capsys.readouterr().err


def test_a_chain_of_500_extends_is_one_config_error(project, capsys):
    """It ended in a RecursionError traceback and exit 1."""
    first = _chain(project, 500)
    write(project, "a.py", "x = 1\n")
    code = main(["check", "--no-cache", "--config", str(first), "a.py"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "c31.toml: extend: more than 32 config files extend one another, starting at" in err
    assert f"{first}; shorten the chain" in err
