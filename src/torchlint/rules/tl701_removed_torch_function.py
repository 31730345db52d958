"""TL701 (opt-in): a call of a function, tensor method or keyword argument torch has removed; it raises."""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from torchlint.edits import renamed_reference, without_arg
from torchlint.model import FileModel
from torchlint.model.records import CallSite
from torchlint.model.torch_api import (REMOVED, REMOVED_KEYWORDS, REMOVED_METHODS, KeywordChange, api_calls,
                                       keyword_calls, method_calls)
from torchlint.needs import Text
from torchlint.rule import Finding, Fix, Rule
from torchlint.torch_version import format_version


def _matrix_rank_fix(file_model: FileModel, call: CallSite) -> Optional[Fix]:
    """``torch.matrix_rank(A)`` -> ``torch.linalg.matrix_rank(A)``: with one positional
    argument the tolerance (largest singular value x max(m, n) x eps) is the same."""
    args = call.node.args
    if len(args) != 1 or args[0].keyword is not None or args[0].star:
        return None
    renamed = renamed_reference(file_model, call.scope, call.callee, "torch.matrix_rank", "torch.linalg.matrix_rank")
    if renamed is None:
        return None
    func, imports = renamed
    return Fix("call torch.linalg.matrix_rank", ((call.node.func, func),), imports=imports)


_FIXES = {"matrix_rank": _matrix_rank_fix}


def _drop_keyword_fix(call: CallSite, change: KeywordChange, argument: cst.Arg) -> Optional[Fix]:
    """The call without the removed argument: on every torch the target allows, passing it raises
    TypeError, so leaving it out only makes the call run (a ``verbose=True`` printed the learning
    rate on torch older than 2.7, which the target no longer includes)."""
    if not change.drop:
        return None
    return Fix(f"drop {change.keyword}=", ((call.node, without_arg(call.node, argument)),))


class RemovedTorchFunction(Rule):
    code = "TL701"
    name = "removed-torch-function"
    message = "this torch function, method or argument was removed and the call raises; use its replacement"
    default = False
    fix_safety = "safe"
    needs = Text(r"\b(?:solve|lstsq|symeig|eig|matrix_rank|verbose|names|refine_names|align_to|align_as)\b")
    torch_version = """
Each removal is reported when the target torch version
(`target-torch-version`) is at or above the release that made it: 1.12
for the five linear-algebra functions (deprecated since 1.9; their
`torch.linalg` replacements exist from 1.9 on), 2.7 for the learning-rate
schedulers' `verbose` argument (deprecated since 2.2; TL702 reports it for
a target from 2.2 to 2.6), and 2.13 for named tensors (`names=` of the
tensor factories, `refine_names`, `align_to`, `align_as`). Code that still
supports an older torch, where the call works, is not told about them.
"""
    docs = """
## What it does
Finds calls of torch APIs that PyTorch removed, so that the call raises:

- linear-algebra functions removed in 1.12 after their deprecation in 1.9:
  `torch.solve`, `torch.lstsq`, `torch.symeig`, `torch.eig` and
  `torch.matrix_rank` (also through `from torch import solve` and aliases of
  `torch`). Torch 2.13 still has the names, as stubs that raise
  `RuntimeError` with a migration note;
- the `verbose=` argument of the learning-rate schedulers
  (`StepLR(optimizer, 30, verbose=True)`, `ReduceLROnPlateau`, ...), removed
  in 2.7 after its deprecation in 2.2: the constructor raises `TypeError`;
- named tensors, removed in 2.13: `names=` of `torch.zeros`, `ones`, `empty`,
  `full`, `rand`, `randn` and `tensor` (`TypeError`), and the methods
  `refine_names`, `align_to` and `align_as` (`AttributeError`).

The list, each entry's source and the release that removed it are kept in
`torchlint/model/torch_api.py`.

## Why is this bad
The call fails the first time it runs: a tutorial or an old training script
that reaches it crashes, often deep into a run (an evaluation step, a
whitening layer that only runs on some batches). The replacements are not
drop-in renames: `torch.linalg.solve(A, B)` takes its arguments in the other
order and returns only the solution, `torch.linalg.eigh` uses the lower
triangle by default where `symeig` used the upper one, `torch.linalg.eig`
returns complex tensors, and `torch.linalg.lstsq(A, B).solution` no longer
packs residuals into the solution.

Not reported: method calls on tensors (`A.solve(B)`), whose receiver
torchlint cannot prove is a tensor, except the named-tensor methods, whose
names few others use (`rename` and `names`, which pandas and others
share, are left out); even those are not reported in a file that imports
tensordict (its `TensorDict` has a `refine_names` of its own) or that
defines a method of the same name; names the file rebinds (its own
`def solve`); a
`verbose` passed by position, or by a subclass to `super().__init__`.

## Example
```python
X, _ = torch.solve(B, A)
rank = torch.matrix_rank(A)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 30, verbose=True)
```

## Use instead
```python
X = torch.linalg.solve(A, B)
rank = torch.linalg.matrix_rank(A)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 30)
print(scheduler.get_last_lr())
```

## Fix safety
Two fixes, both safe: `torch.matrix_rank(A)` with a single argument becomes
`torch.linalg.matrix_rank(A)` (with no tolerance given both use the largest
singular value times `max(m, n)` times the dtype's epsilon), and a
scheduler's `verbose=` argument is dropped (the call raises on every torch
the target allows; without it, it runs). The other functions change argument
order, return types or triangles, and named tensors have no unnamed
spelling a tool could write; they need a person to adapt the code around
them.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for call, change, _ in api_calls(file_model, REMOVED):
            message = f"{change.name} was removed in torch {change.since[0]}.{change.since[1]} and raises " \
                      f"RuntimeError; use {change.replacement}"
            build = _FIXES.get(change.fix or "")
            yield self.report(call.node, message, fix=build(file_model, call) if build else None)
        for call, change in method_calls(file_model, REMOVED_METHODS):
            method = change.name.rsplit(".", 1)[1]
            yield self.report(call.node, f"Tensor.{method} was removed in torch {format_version(change.since)} "
                              f"with named tensors and raises AttributeError; use {change.replacement}")
        for call, removed, argument in keyword_calls(file_model, REMOVED_KEYWORDS):
            callee = file_model.qualify(call)
            yield self.report(call.node, f"{callee}({removed.keyword}=...): torch {format_version(removed.since)} "
                              f"removed the {removed.keyword} argument and the call raises TypeError; "
                              f"{removed.replacement}", fix=_drop_keyword_fix(call, removed, argument))

    valid = (
        """\
import torch


def whiten(features):
    cov = features.T @ features / len(features)
    values, vectors = torch.linalg.eigh(cov)
    return features @ vectors / values.clamp_min(1e-5).sqrt()
""",
        """\
import numpy as np
import torch


def solve(system, rhs):
    return np.linalg.solve(system, rhs)


def fit(design, target):
    weights = solve(design.numpy(), target.numpy())
    return torch.from_numpy(weights)
""",
        """\
import torch


class Solver:
    def solve(self, A, B):
        return torch.linalg.solve(A, B)


def run(solver, A, B):
    return solver.solve(A, B)
""",
        # verbose= of another library's scheduler, names= of a call that is no tensor factory,
        # a dataframe's rename, a project module's own align_to.
        """\
import geometry
import pandas as pd
import torch
from mylib.schedules import WarmupCosine


def setup(optimizer, points, target):
    scheduler = WarmupCosine(optimizer, warmup=10, verbose=True)
    table = pd.DataFrame(torch.rand(3, 2).numpy(), columns=["a", "b"]).rename(columns={"a": "x"})
    aligned = geometry.align_to(points, target)
    frame = pd.DataFrame(torch.rand(3, 2).numpy()).set_axis(["x", "y"], axis=1).rename_axis(names=["row"])
    return scheduler, table, aligned, frame
""",
        # The target still supports torch 2.6, where verbose= works (deprecated: TL702's).
        """\
# target-torch-version: 2.6
import torch


def build(optimizer):
    return torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, verbose=False)
""",
        # TensorDict has named dimensions of its own: refine_names on one is its method, not torch's.
        """\
import torch
from tensordict import TensorDict


def name_batch(images):
    batch = TensorDict({"images": images}, batch_size=[images.shape[0]])
    return batch.refine_names("N")
""",
        # A class of the file's own with the method: its callers mean it (tensordict's own base class).
        """\
import torch


class Frame:
    def __init__(self, data, names):
        self.data, self.names = data, names

    def refine_names(self, *names):
        return Frame(self.data, list(names))

    def joined(self, other):
        return torch.cat([self.data, other.refine_names(*self.names).data])
""",
    )
    invalid = (
        """\
import torch


def least_squares(A, B):
    X, _ = torch.solve(B, A)  # expect: TL701
    return X
""",
        """\
import torch as T


def effective_rank(weight):
    return T.matrix_rank(weight)  # expect: TL701


def spectrum(cov):
    values, _ = T.symeig(cov, eigenvectors=True)  # expect: TL701
    return values
""",
        """\
import torch
from torch.optim.lr_scheduler import ReduceLROnPlateau


def build(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = ReduceLROnPlateau(optimizer, "min", patience=2, verbose=True)  # expect: TL701
    return optimizer, scheduler


def channels_last(images):
    named = images.refine_names("N", "C", "H", "W")  # expect: TL701
    return named.align_to("N", "H", "W", "C")  # expect: TL701


def blank(batch):
    return torch.zeros(batch, 3, names=("N", "C"))  # expect: TL701
""",
    )
