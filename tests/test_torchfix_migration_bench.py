"""bench/torchfix_migration.py, the move from TorchFix measured on a checkout, run on a small tree."""
from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT

spec = importlib.util.spec_from_file_location("_torchlint_torchfix_migration", ROOT / "bench" / "torchfix_migration.py")
migration = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = migration  # its dataclass looks its module up there
spec.loader.exec_module(migration)

TREE = {
    "train.py": """\
import torch
import torch.nn.functional as F
import torchvision.models as models  # noqa: TOR203


def resume(path):
    model = torch.load(path)  # noqa: TOR102
    model.eval()
    return model


def grow(images):
    return F.upsample(images, scale_factor=2)  # noqa: TOR101, E501  kept for the old exports
""",
    "batched.py": """\
from functorch import vmap  # noqa: TOR103

# flake8: noqa: TOR102
""",
    "plain.py": "import torch\n\nx = torch.zeros(3)  # noqa: E501\n",
}


def test_the_migration_of_a_small_tree(tmp_path):
    checkout = tmp_path / "project"
    checkout.mkdir()
    for name, text in TREE.items():
        (checkout / name).write_text(text, encoding="utf-8")

    result = migration.migrate(checkout)

    assert all((checkout / name).read_text(encoding="utf-8") == text for name, text in TREE.items())  # untouched
    assert not (checkout / "pyproject.toml").exists()
    assert result.files == 3 and result.files_rewritten == 2
    assert result.rewritten == {"TOR101": 1, "TOR102": 1, "TOR103": 1}
    assert result.left == {"TOR203": 1}  # no torchlint rule answers an import style
    assert result.file_level == {"TOR102": 1}  # flake8 reads it as a whole-file noqa: TL011 leaves it
    assert result.wrong == [] and result.other_changes == []  # E501 and the reason stay
    assert result.idempotent
    # TL507 (a loaded whole model) and TL702 (F.upsample) are silenced by their migrated codes;
    # torchlint reports a deprecated function at its call, never at the import TOR103 marked.
    assert result.suppressing == 2
    assert result.unsuppressed == ["batched.py:1 TL702"]
    shown = migration.table(result)
    assert "| second run changed nothing | yes |" in shown
    assert "TOR102 -> TL507 1" in shown and "- suppresses nothing: batched.py:1 TL702" in shown
