"""TL704 (opt-in): ``torch.log(1 + x)`` and ``torch.exp(x) - 1`` lose precision for small x."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from torchlint.edits import as_argument, parent_map, renamed_reference
from torchlint.model import FileModel
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding


def _is_one(node: cst.BaseExpression) -> bool:
    """The literal ``1`` or ``1.0`` (not ``1e0``, not a name that holds one)."""
    if node.lpar:
        return False
    return (isinstance(node, cst.Integer) and node.value == "1") or (
        isinstance(node, cst.Float) and node.value in ("1.0", "1.")
    )


def _only_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    return call.args[0].value


def _log1p_operand(call: cst.Call) -> Optional[cst.BaseExpression]:
    """``x`` of ``torch.log(1 + x)`` or ``torch.log(x + 1)``."""
    arg = _only_argument(call)
    if not isinstance(arg, cst.BinaryOperation) or not isinstance(arg.operator, cst.Add):
        return None
    if _is_one(arg.left):
        return arg.right
    if _is_one(arg.right):
        return arg.left
    return None


class Log1pExpm1(Rule):
    code = "TL704"
    name = "log1p-expm1"
    message = "torch.log(1 + x) and torch.exp(x) - 1 lose precision for small x; use torch.log1p(x) / torch.expm1(x)"
    default = False
    fix_safety = "safe"
    needs = Text(r"\blog\s*\(|\bexp\s*\(")
    docs = """
## What it does
Finds `torch.log(1 + x)` (or `torch.log(x + 1)`) and `torch.exp(x) - 1`,
where the `1` is the literal one (`1` or `1.0`), also through aliases of
`torch` and `from torch import log, exp`.

## Why is this bad
For small `x`, `1 + x` rounds away most of `x`'s digits before the
logarithm sees them: in float32, `1 + 1e-8` is exactly `1`, so
`torch.log(1 + x)` returns 0 where the answer is `1e-8`, and for `x = 1e-4`
only about three significant digits survive. `torch.exp(x) - 1` loses the
same digits in the subtraction. `torch.log1p` and `torch.expm1` compute the
same functions without forming `1 + x` or `exp(x)`, to full precision.
These shapes are common in losses and transforms: log-scaled targets
(`log(1 + count)`), softplus written by hand, ELU-like activations,
continuous-time discounting.

Only calls of torch's own `log` and `exp` are reported: their argument is a
tensor (they raise on a Python float), so the rewrite cannot change which
function runs. `math.log(1 + x)` and `np.log(1 + x)` are left alone, as are
`1 + x` written with another constant, and method forms such as
`(1 + x).log()`, whose receiver torchlint cannot prove is a tensor.

## Example
```python
target = torch.log(1 + counts)
decay = torch.exp(rate * dt) - 1
```

## Use instead
```python
target = torch.log1p(counts)
decay = torch.expm1(rate * dt)
```

## Fix safety
It computes the same function of the same tensor, with the same dtype
and shape. Only the rounding differs, towards the exact value; a test
that compares results bit for bit with the old expression may need its
tolerance.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        parents = None
        for call in file_model.calls:
            name = file_model.qualify(call)
            if name == "torch.log":
                operand = _log1p_operand(call.node)
                if operand is not None:
                    fix = self._fix(file_model, call, "torch.log", "torch.log1p", call.node, operand)
                    yield self.report(call.node, "torch.log(1 + x) loses precision for small x; use "
                                                 "torch.log1p(x)", fix=fix)
            elif name == "torch.exp" and (argument := _only_argument(call.node)) is not None:
                parents = parents or parent_map(file_model)
                parent = parents.get(id(call.node))
                if isinstance(parent, cst.BinaryOperation) and parent.left is call.node \
                        and isinstance(parent.operator, cst.Subtract) and _is_one(parent.right):
                    fix = self._fix(file_model, call, "torch.exp", "torch.expm1", parent, argument)
                    yield self.report(parent, "torch.exp(x) - 1 loses precision for small x; use torch.expm1(x)",
                                      fix=fix)

    @staticmethod
    def _fix(file_model: FileModel, call: CallSite, old: str, new: str, replaced: cst.BaseExpression,
             operand: cst.BaseExpression) -> Optional[Fix]:
        renamed = renamed_reference(file_model, call.scope, call.callee, old, new)
        if renamed is None:
            return None
        func, imports = renamed
        # A call binds tighter than any operator, so parentheses around ``(exp(x) - 1)`` can go.
        replacement = cst.Call(func=func, args=(cst.Arg(as_argument(operand)),))
        return Fix(f"call {new}", ((replaced, replacement),), imports=imports)

    valid = (
        """\
import math

import numpy as np
import torch


def schedule(step, rate):
    return math.log(1 + step) * rate, np.log(1 + np.arange(step))


def soft_count(counts):
    return torch.log1p(counts), torch.log(2 + counts)
""",
        """\
import torch


def elu(x, alpha=1.0):
    return torch.where(x > 0, x, alpha * torch.expm1(x))


def ratio(x):
    return torch.exp(x) - 2, 1 - torch.exp(-x), torch.exp(x - 1)
""",
    )
    invalid = (
        """\
import torch


def log_target(counts):
    return torch.log(1 + counts)  # expect: TL704


def softplus(x):
    return torch.log(torch.exp(x) + 1.0)  # expect: TL704
""",
        """\
from torch import exp


def discount(rate, dt):
    return (exp(rate * dt) - 1) / rate  # expect: TL704
""",
    )
