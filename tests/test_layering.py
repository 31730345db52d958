"""The import layering: no module imports a layer above it.

Read from the source with ``ast`` (so imports inside functions count too,
which is where upward dependencies used to hide). A new module must be
placed in a layer here before its tests can pass.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "torchlint"

# Lowest first. A module may import its own layer and the ones below it.
LAYERS = (
    ("__init__", "diagnostic", "text_gate", "links", "noqa", "cst_nodes", "cst_parse", "torch_version", "declared_torch",
     "codes", "catalogue", "source", "text_checks", "measured", "safe_io", "torchfix_codes", "buffers"),  # leaves
    ("model",),  # the per-file model (package)
    ("positions", "edits", "tree_gate", "needs", "rule"),  # what rules build on
    ("rules",),  # the catalogue
    ("engine", "notebook", "request", "rule_index"),  # one file's lint path; what a file is linted for; the rules known
    ("runner", "fixer", "config", "docs", "claims_page", "comparison_page"),  # many files; the fix loop; config; rule docs
    ("fix_files", "add_noqa", "reporters", "discover"),  # the front ends' helpers
    ("cli", "server", "flake8_plugin", "jupyter_lsp_spec", "__main__"),  # front ends
)
LAYER_OF = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}


def _unit(path: Path) -> str:
    """The layering unit of a source file: a top-level module, or a subpackage as a whole."""
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def _imported_units(tree: ast.AST) -> set:
    units = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            base = node.module
            names = [f"{base}.{alias.name}" for alias in node.names] if base == "torchlint" else [base]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "torchlint" and len(parts) > 1:
                units.add("__init__" if parts[1] == "__version__" else parts[1])
    return units


def _edges() -> list:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        unit = _unit(path)
        for imported in _imported_units(ast.parse(path.read_text(encoding="utf-8"))):
            if imported != unit:
                out.append((path.relative_to(PACKAGE).as_posix(), unit, imported))
    return out


def test_every_module_has_a_layer():
    units = {_unit(path) for path in PACKAGE.rglob("*.py")}
    assert units - set(LAYER_OF) == set(), "place the new module in LAYERS"


@pytest.mark.parametrize("where, unit, imported", _edges(), ids=lambda v: str(v))
def test_no_import_goes_up_a_layer(where, unit, imported):
    assert imported in LAYER_OF, f"{where} imports unknown torchlint.{imported}"
    assert LAYER_OF[imported] <= LAYER_OF[unit], (
        f"{where} (layer {LAYER_OF[unit]}) imports torchlint.{imported} (layer {LAYER_OF[imported]})"
    )


def test_rules_and_model_stay_below_the_fix_loop_and_front_ends():
    above = {"fixer", "fix_files", "runner", "cli", "server", "reporters", "flake8_plugin", "engine"}
    wrong = [(where, imported) for where, unit, imported in _edges()
             if unit in ("rules", "model", "rule", "edits") and imported in above]
    assert wrong == []


def test_the_check_sees_imports_inside_functions(tmp_path):
    tree = ast.parse("def f():\n    from torchlint.runner import lint_data\n    import torchlint.cli\n")
    assert _imported_units(tree) == {"runner", "cli"}
