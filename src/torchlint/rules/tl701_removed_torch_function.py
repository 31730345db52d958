"""TL701 (opt-in): a call of a function torch has removed; it raises at run time."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional
from torchlint.edits import renamed_reference
from torchlint.model import FileModel
from torchlint.model.torch_api import REMOVED, api_calls
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding


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


class RemovedTorchFunction(Rule):
    code = "TL701"
    name = "removed-torch-function"
    message = "this torch function was removed and raises RuntimeError; call its torch.linalg replacement"
    default = False
    fix_safety = "safe"
    gate = (r"\b(?:solve|lstsq|symeig|eig|matrix_rank)\b",)
    torch_version = """
Each function is reported when the target torch version
(`target-torch-version`) is at or above the release that removed it: 1.12
for all five (deprecated since 1.9). Code that still supports torch older
than 1.12 is not told about them. Their `torch.linalg` replacements all
exist from 1.9 on.
"""
    docs = """
## What it does
Finds calls of linear-algebra functions that PyTorch removed after
deprecating them in 1.9: `torch.solve`, `torch.lstsq`, `torch.symeig`,
`torch.eig` and `torch.matrix_rank` (also through `from torch import solve`
and aliases of `torch`). Torch 2.13 still has the names, as stubs that raise
`RuntimeError` with a migration note; the list and each stub's line are kept
with their sources in `torchlint/model/torch_api.py`.

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
torchlint cannot prove is a tensor; names the file rebinds (its own
`def solve`).

## Example
```python
X, _ = torch.solve(B, A)
rank = torch.matrix_rank(A)
```

## Use instead
```python
X = torch.linalg.solve(A, B)
rank = torch.linalg.matrix_rank(A)
```

## Fix safety
Only `torch.matrix_rank(A)` with a single argument is fixed, to
`torch.linalg.matrix_rank(A)`: with no tolerance given both use the largest
singular value times `max(m, n)` times the dtype's epsilon.
The others change argument order, return types or triangles, and need a
person to adapt the code around them.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for call, change, _ in api_calls(file_model, REMOVED):
            message = f"{change.name} was removed in torch {change.since[0]}.{change.since[1]} and raises " \
                      f"RuntimeError; use {change.replacement}"
            build = _FIXES.get(change.fix or "")
            yield self.report(call.node, message, fix=build(file_model, call) if build else None)

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
    )
