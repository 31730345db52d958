"""bench/dense.py's ``--floor``: the lint with the rules' checks emptied, and every check put back after."""
from __future__ import annotations

import importlib.util
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))  # dense.py imports bench.py and training_corpus.py beside it
spec = importlib.util.spec_from_file_location("_torchlint_dense_bench", ROOT / "bench" / "dense.py")
dense = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dense)

from torchlint.engine import lint_source  # noqa: E402
from torchlint.rules.tl107_display_forward_without_no_grad import DisplayForwardWithoutNoGrad  # noqa: E402

TRAIN = b"""\
import torch
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss)
"""


def codes(data: bytes) -> list:
    return [d.code for d in lint_source(data, "train.py", dense.RULES).diagnostics]


def test_emptied_checks_find_nothing_and_come_back_after():
    before = codes(TRAIN)
    assert "TL301" in before
    with dense.checks_emptied():
        assert codes(TRAIN) == []
    assert codes(TRAIN) == before
    assert "check" not in DisplayForwardWithoutNoGrad.__dict__  # it inherits TL101's again


def test_a_measured_file_gets_its_floor(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(TRAIN)
    row = dense.measure(str(path), TRAIN, 1, floor=True)
    assert row["diagnostics"] == len(codes(TRAIN))
    assert row["floor_ms"] > 0 and row["floor_ratio"] == row["floor_ms"] / row["parse_ms"]
    assert "floor_ms" not in dense.measure(str(path), TRAIN, 1)
