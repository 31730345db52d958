"""TL706 (opt-in): ``log(sum(exp(x)))`` written by hand overflows where ``torch.logsumexp`` does not."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

import libcst as cst

from torchlint.edits import as_argument, dotted_expression, shadowed, torch_reference
from torchlint.model import CallSite, FileModel
from torchlint.needs import Text
from torchlint.rule import Finding, Fix, Rule

_WHOLE_TENSOR = ("log(sum(exp(x))) overflows to inf for large x and to -inf for very negative x; "
                 "use torch.logsumexp(x.flatten(), 0)")
# What torch.sum and Tensor.sum take besides the dimensions that logsumexp takes too.
_SUM_KEYWORDS = frozenset(("dim", "keepdim"))


@dataclass(frozen=True)
class _Reduction:
    """``log(sum(exp(operand), *dims))`` as written: the operand and the arguments of the sum after it."""

    operand: cst.BaseExpression
    sum_args: Tuple[cst.Arg, ...]


def _method_receiver(node: cst.BaseExpression, method: str) -> Optional[cst.BaseExpression]:
    """``x`` of ``x.<method>(...)``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == method:
        return node.func.value
    return None


def _is_torch(file_model: FileModel, node: cst.BaseExpression, name: str) -> bool:
    call = file_model.call_of(node) if isinstance(node, cst.Call) else None
    return call is not None and file_model.qualify(call) == f"torch.{name}"


def _plain_args(node: cst.Call) -> bool:
    return all(arg.star == "" for arg in node.args)


def _exp_operand(file_model: FileModel, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """``x`` of ``torch.exp(x)`` or of ``x.exp()``."""
    if not isinstance(node, cst.Call) or not _plain_args(node):
        return None
    if _is_torch(file_model, node, "exp"):
        return node.args[0].value if len(node.args) == 1 and node.args[0].keyword is None else None
    receiver = _method_receiver(node, "exp")
    return receiver if receiver is not None and not node.args else None


def _reduction(file_model: FileModel, summed: cst.BaseExpression) -> Optional[_Reduction]:
    """``torch.sum(torch.exp(x), ...)`` or ``<exp>.sum(...)``, with the sum's other arguments."""
    if not isinstance(summed, cst.Call) or not _plain_args(summed):
        return None
    if _is_torch(file_model, summed, "sum"):
        if not summed.args or summed.args[0].keyword is not None:
            return None
        inner, rest = summed.args[0].value, tuple(summed.args[1:])
    else:
        receiver = _method_receiver(summed, "sum")
        if receiver is None:
            return None
        inner, rest = receiver, tuple(summed.args)
    operand = _exp_operand(file_model, inner)
    return _Reduction(operand, rest) if operand is not None else None


def _log_of_sum(file_model: FileModel, call: CallSite) -> Optional[_Reduction]:
    """The reduction under ``torch.log(...)`` or ``(...).log()``, when it sums an ``exp``."""
    node = call.node
    if file_model.qualify(call) == "torch.log":
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return None
        return _reduction(file_model, node.args[0].value)
    receiver = _method_receiver(node, "log")
    return _reduction(file_model, receiver) if receiver is not None and not node.args else None


def _logsumexp_args(reduction: _Reduction) -> Optional[List[cst.Arg]]:
    """logsumexp's arguments for the same reduction; None where it takes none like them: no
    dimension (logsumexp needs one), ``dim=None``, or what it lacks (``dtype=``, ``out=``)."""
    rest = reduction.sum_args
    if len(rest) > 2 or any(arg.keyword is not None and arg.keyword.value not in _SUM_KEYWORDS for arg in rest):
        return None
    dims = [arg for arg in rest if arg.keyword is None or arg.keyword.value == "dim"]
    if not dims or (isinstance(dims[0].value, cst.Name) and dims[0].value.value == "None"):
        return None
    rest_args = (arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in rest)
    return [cst.Arg(as_argument(reduction.operand)), *rest_args]


class LogSumExp(Rule):
    code = "TL706"
    name = "log-sum-exp"
    message = ("log(sum(exp(x))) overflows to inf for large x and to -inf for very negative x; "
               "use torch.logsumexp(x, dim)")
    default = False
    fix_safety = "safe"
    needs = Text(r"\bexp\b") & Text(r"\bsum\b") & Text(r"\blog\b")
    docs = """
## What it does
Finds the log of a sum of exponentials written out by hand:
`torch.log(torch.sum(torch.exp(x), dim))`, `torch.log(torch.exp(x).sum(dim))`
and the method forms `x.exp().sum(dim).log()`, through any alias of
`torch` and `from torch import exp, log, sum`. This is TorchFix's TOR108.

## Why is this bad
`exp` leaves float32's range quickly: `exp(89.0)` is `inf`, and `exp(-104.0)`
is `0`. Scores, energies and log-likelihoods reach those magnitudes in real
models (unnormalised logits at a low temperature, the log-likelihood of a
long sequence), and then the whole expression is `inf` or `-inf`, and so is
every gradient through it: the loss becomes `nan` a few steps later.
`torch.logsumexp` subtracts the maximum first, computes the same function,
and stays finite wherever the result is representable.

## Example
```python
log_partition = torch.log(torch.sum(torch.exp(scores), dim=-1))
log_likelihood = log_probs.exp().sum(0).log()
```

## Use instead
```python
log_partition = torch.logsumexp(scores, dim=-1)
log_likelihood = torch.logsumexp(log_probs, 0)
```

## Fix safety
The fix writes `torch.logsumexp` with the sum's own dimension and
`keepdim`: the same function of the same tensor, with the same shape and
dtype. It differs where the old expression overflowed (a finite value
instead of `inf`) and in the last bits of rounding. A sum over every element
(no dimension) is reported without a fix: `torch.logsumexp` needs a
dimension (`torch.logsumexp(x.flatten(), 0)` is one way to write it), and so
is a sum with `dtype=`, which logsumexp does not take.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for call in file_model.calls:
            reduction = _log_of_sum(file_model, call)
            if reduction is None:
                continue
            if reduction.sum_args:
                yield self.report(call.node, fix=self._fix(file_model, call, reduction))
            else:  # a sum of every element: logsumexp wants a dimension
                yield self.report(call.node, _WHOLE_TENSOR)

    @staticmethod
    def _fix(file_model: FileModel, call: CallSite, reduction: _Reduction) -> Optional[Fix]:
        args = _logsumexp_args(reduction)
        if args is None:
            return None
        name, imports = torch_reference(file_model, "logsumexp")
        if shadowed(call.scope, name.split(".", 1)[0]):
            return None
        replacement = cst.Call(func=dotted_expression(name), args=args)
        return Fix("call torch.logsumexp", ((call.node, replacement),), imports=imports)

    valid = (
        """\
import math

import numpy as np
import torch


def log_partition(scores):
    return torch.logsumexp(scores, dim=-1)


def numpy_side(values):
    return np.log(np.sum(np.exp(values))), math.log(sum(math.exp(v) for v in values))
""",
        """\
import torch


def mixture(log_weights, log_probs):
    weights = torch.exp(log_weights)
    return torch.log(weights.sum(-1)), torch.log(torch.sum(log_probs, dim=0)), torch.sum(torch.exp(log_probs))
""",
    )
    invalid = (
        """\
import torch


def log_partition(scores):
    return torch.log(torch.sum(torch.exp(scores), dim=-1))  # expect: TL706


def log_likelihood(log_probs):
    return log_probs.exp().sum(0).log()  # expect: TL706
""",
        """\
import torch as T
from torch import exp, log


def free_energy(energies, keep):
    total = log(exp(-energies).sum(dim=1, keepdim=keep))  # expect: TL706
    everything = T.log(T.sum(T.exp(energies)))  # expect: TL706
    return total, everything
""",
    )
