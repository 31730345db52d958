"""TL702 (opt-in): a call of a deprecated torch function, or a deprecated argument, that has a replacement."""
from __future__ import annotations

from typing import Callable, Dict, Iterator, Optional, Sequence, Tuple

import libcst as cst

from torchlint.diagnostic import Applicability
from torchlint.edits import renamed_reference, without_arg
from torchlint.model import FileModel
from torchlint.model.expr import dotted, literal_bool
from torchlint.model.records import CallSite, Scope
from torchlint.model.torch_api import (DEPRECATED, DEPRECATED_KEYWORDS, REMOVED_KEYWORDS, ApiChange, KeywordChange,
                                       api_calls, head_rebound, keyword_calls)
from torchlint.needs import Text
from torchlint.rule import Finding, Fix, Rule
from torchlint.torch_version import format_version

_NO_SPACE = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _plain_positional(args: Sequence[cst.Arg], count: Optional[int] = None) -> bool:
    """Only positional arguments, no ``*``/``**`` (and ``count`` of them, if given)."""
    return all(a.keyword is None and not a.star for a in args) and (count is None or len(args) == count)


def _renamed(file_model: FileModel, call: CallSite, change: ApiChange, new: str
             ) -> Optional[Tuple[cst.BaseExpression, Tuple[str, ...]]]:
    assert call.callee is not None  # api_calls finds calls by their callee
    return renamed_reference(file_model, call.scope, call.callee, change.name, new)


def _rename_fix(file_model: FileModel, call: CallSite, change: ApiChange) -> Optional[Fix]:
    if any(a.star for a in call.node.args):
        return None
    assert change.rename is not None  # asked of renamed functions
    renamed = _renamed(file_model, call, change, change.rename)
    if renamed is None:
        return None
    func, imports = renamed
    return Fix(f"call {change.rename}", ((call.node.func, func),), imports=imports,
               applicability=Applicability.SAFE)


def _amp_device_fix(file_model: FileModel, call: CallSite, change: ApiChange) -> Optional[Fix]:
    """``torch.cuda.amp.X(k=v)`` -> ``torch.amp.X("cuda", k=v)``. Keyword arguments only: the
    new signatures put ``device_type``/``device`` first, so positions would shift."""
    args = call.node.args
    if any(a.keyword is None or a.star for a in args):
        return None
    device, _, leaf = change.name[len("torch."):].partition(".amp.")
    renamed = _renamed(file_model, call, change, f"torch.amp.{leaf}")
    if renamed is None:
        return None
    func, imports = renamed
    first = cst.Arg(cst.SimpleString(f'"{device}"'), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new = call.node.with_changes(func=func, args=(first, *args) if args else (first.with_changes(comma=cst.MaybeSentinel.DEFAULT),))
    # GradScaler passes every default on unchanged; autocast's dtype and cache defaults
    # become the process-wide ones (set_autocast_dtype), float16/bfloat16 and True unless changed.
    safe = leaf == "GradScaler"
    return Fix(f"call torch.amp.{leaf}(\"{device}\", ...)", ((call.node, new),), imports=imports,
               applicability=Applicability.SAFE if safe else Applicability.UNSAFE)


def _device_keyword() -> cst.Arg:
    return cst.Arg(cst.SimpleString('"cuda"'), keyword=cst.Name("device_type"), equal=_NO_SPACE)


def _amp_decorator_fix(file_model: FileModel, call: CallSite, change: ApiChange) -> Optional[Fix]:
    """``torch.cuda.amp.custom_fwd(f, cast_inputs=...)`` -> ``torch.amp.custom_fwd(f, cast_inputs=...,
    device_type="cuda")``: what the deprecated function calls itself."""
    args = call.node.args
    if any(a.star for a in args):
        return None
    leaf = change.name.rsplit(".", 1)[1]
    renamed = _renamed(file_model, call, change, f"torch.amp.{leaf}")
    if renamed is None:
        return None
    func, imports = renamed
    new_args = list(args)
    if new_args:
        new_args[-1] = new_args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new = call.node.with_changes(func=func, args=(*new_args, _device_keyword()))
    return Fix(f'call torch.amp.{leaf}(..., device_type="cuda")', ((call.node, new),), imports=imports,
               applicability=Applicability.SAFE)


def _multi_dot_fix(file_model: FileModel, call: CallSite, change: ApiChange) -> Optional[Fix]:
    """``torch.chain_matmul(a, b, c)`` -> ``torch.linalg.multi_dot([a, b, c])`` (two or more
    matrices: chain_matmul's one-matrix form has no multi_dot twin)."""
    args = call.node.args
    if len(args) < 2 or not _plain_positional(args):
        return None
    renamed = _renamed(file_model, call, change, "torch.linalg.multi_dot")
    if renamed is None:
        return None
    func, imports = renamed
    elements = [cst.Element(a.value, comma=a.comma) for a in args]
    elements[-1] = elements[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    new = call.node.with_changes(func=func, args=(cst.Arg(cst.List(elements)),))
    return Fix("call torch.linalg.multi_dot([...])", ((call.node, new),), imports=imports,
               applicability=Applicability.SAFE)


def _single_argument_fix(file_model: FileModel, call: CallSite, change: ApiChange) -> Optional[Fix]:
    """``torch.qr(A)`` / ``torch.cholesky(A)`` with defaults only: the torch.linalg twin."""
    if not _plain_positional(call.node.args, 1):
        return None
    new_name = "torch.linalg." + change.name.rsplit(".", 1)[1]
    renamed = _renamed(file_model, call, change, new_name)
    if renamed is None:
        return None
    func, imports = renamed
    return Fix(f"call {new_name}", ((call.node.func, func),), imports=imports, applicability=Applicability.SAFE)


def _lu_solve_fix(file_model: FileModel, call: CallSite, change: ApiChange) -> Optional[Fix]:
    """``torch.lu_solve(B, LU, pivots)`` -> ``torch.linalg.lu_solve(LU, pivots, B)``."""
    args = call.node.args
    if not _plain_positional(args, 3):
        return None
    renamed = _renamed(file_model, call, change, "torch.linalg.lu_solve")
    if renamed is None:
        return None
    func, imports = renamed
    b, lu, pivots = (a.value for a in args)
    new = call.node.with_changes(func=func, args=(
        args[0].with_changes(value=lu), args[1].with_changes(value=pivots), args[2].with_changes(value=b)))
    return Fix("call torch.linalg.lu_solve(LU, pivots, B)", ((call.node, new),), imports=imports,
               applicability=Applicability.SAFE)


def _drop_keyword_fix(call: CallSite, change: KeywordChange, argument: cst.Arg) -> Optional[Fix]:
    """The call without the deprecated argument. Safe where the argument asks for nothing
    (``verbose=False``); where it may ask for something (``verbose=True`` printed the learning
    rate on the torch versions that still take it) leaving it out changes the output: unsafe."""
    if not change.drop:
        return None
    quiet = literal_bool(argument.value) is False or (
        isinstance(argument.value, cst.SimpleString) and argument.value.evaluated_value == "deprecated")
    return Fix(f"drop {change.keyword}=", ((call.node, without_arg(call.node, argument)),),
               applicability=Applicability.SAFE if quiet else Applicability.UNSAFE)


def _since(change: ApiChange | KeywordChange) -> str:
    return "" if change.since <= (1, 0) else f" (since torch {format_version(change.since)})"


_FIXES: Dict[str, Callable[[FileModel, CallSite, ApiChange], Optional[Fix]]] = {
    "amp_device": _amp_device_fix,
    "amp_decorator": _amp_decorator_fix,
    "multi_dot": _multi_dot_fix,
    "single_argument": _single_argument_fix,
    "lu_solve": _lu_solve_fix,
}


class DeprecatedTorchFunction(Rule):
    code = "TL702"
    name = "deprecated-torch-function"
    message = "this torch function or argument is deprecated; use its replacement"
    default = False
    fix_safety = "unsafe"
    # Each name, or the module (``amp``, ``init``, ``jit``) a from-import of it must name, or the keyword.
    needs = (Text(r"\bamp\b|assert_allclose|weight_norm|functional_call|set_default_tensor_type|sdp_kernel|"
                  r"_register_pytree_node|upsample|clip_grad_norm\b|\binit\b|\brange\b|chain_matmul|\bqr\b|"
                  r"cholesky|\blu\b|lu_solve|triangular_solve|\bger\b|_all_gather_base|_reduce_scatter_base|"
                  r"all_gather_into_tensor|reduce_scatter_tensor|\bjit\b|\bverbose\b|broadcast_buffers"))
    torch_version = """
Each function or argument is reported when the target torch version
(`target-torch-version`) is at or above the release that deprecated it, so
that the replacement it suggests exists there: `all_gather_into_tensor`,
`reduce_scatter_tensor` and `DistributedDataParallel(broadcast_buffers=...)`
from 2.13, `torch.jit` (`script`, `script_method`, `trace`, `trace_module`,
`save`, `load`) from 2.10, the schedulers' `verbose=` from 2.2 to 2.6 (from
2.7 on it is removed, and TL701 reports it), `torch.cuda.amp` and
`torch.cpu.amp` from 2.4 (`torch.amp.GradScaler` itself arrived in 2.3),
`torch.nn.attention.sdpa_kernel` from 2.3, `_register_pytree_node` from
2.2, `weight_norm` and `set_default_tensor_type` from 2.1,
`nn.utils.stateless.functional_call` from 2.0, `lu`/`lu_solve` from 1.13,
`testing.assert_allclose` from 1.12, `triangular_solve` from 1.11,
`chain_matmul`, `qr`, `cholesky` and `ger` from 1.9, and the
pre-1.0 deprecations (`torch.range`, `nn.init.normal` without the
underscore, `clip_grad_norm`, `F.upsample`) for any target.
`torch.distributed._all_gather_base` and `_reduce_scatter_base` are
reported from 1.13 with the advice of the target: `all_gather_into_tensor`
and `reduce_scatter_tensor` up to 2.12, `all_gather_single` and
`reduce_scatter_single` from 2.13 (which deprecated the 1.13 names).
"""
    docs = """
## What it does
Finds calls of torch functions that PyTorch deprecated in favour of a
replacement: `torch.cuda.amp.autocast`/`GradScaler`/`custom_fwd`/`custom_bwd`
and `torch.cpu.amp.autocast`/`GradScaler` (use `torch.amp`), the old
`nn.init` names without a trailing underscore (`nn.init.xavier_uniform`),
`nn.utils.clip_grad_norm`, `F.upsample`/`upsample_nearest`/`upsample_bilinear`,
`nn.utils.weight_norm`, `nn.utils.stateless.functional_call`,
`torch.set_default_tensor_type`, `torch.backends.cuda.sdp_kernel`,
`torch.testing.assert_allclose`, `torch.range`, and the linear-algebra
functions that moved to `torch.linalg` (`chain_matmul`, `qr`, `cholesky`,
`lu`, `lu_solve`, `triangular_solve`, `ger`), the single-tensor collectives
`torch.distributed._all_gather_base`, `_reduce_scatter_base`,
`all_gather_into_tensor` and `reduce_scatter_tensor` (renamed
`all_gather_single` and `reduce_scatter_single` in 2.13), TorchScript
(`torch.jit.script`, `script_method`, `trace`, `trace_module`, `save`,
`load`; use `torch.compile` or `torch.export`), and two deprecated
arguments: `verbose=` of the learning-rate schedulers and
`broadcast_buffers=` of `DistributedDataParallel`. Every entry, its
replacement, the release that deprecated it and the line of torch 2.13 that
warns (or documents the deprecation, or the pull request that made it) are
kept in `torchlint/model/torch_api.py`; on torch 2.13 every function but
`torch.ger` warns when called.

## Why is this bad
A deprecated function warns on every run (a `FutureWarning` or
`UserWarning` in the training log) and will be removed: the code breaks
on a later torch. Some also behave worse
than their replacement: `torch.range` includes its end point, unlike Python's
`range` and `torch.arange`, and `torch.testing.assert_allclose` silently
compares tensors of different dtypes.

Not reported: method calls on tensors (`A.qr()`), and names the file
rebinds. A bare decorator (`@torch.cuda.amp.custom_fwd`,
`@torch.jit.script`) is reported like a call (Python calls it).
`torch.norm` and `torch.svd` are documented as discouraged but do not warn,
and their replacements depend on the arguments: they are left out.

## Example
```python
scaler = torch.cuda.amp.GradScaler()
with torch.cuda.amp.autocast(dtype=torch.bfloat16):
    loss = model(x).sum()
nn.init.xavier_uniform(layer.weight)
```

## Use instead
```python
scaler = torch.amp.GradScaler("cuda")
with torch.amp.autocast("cuda", dtype=torch.bfloat16):
    loss = model(x).sum()
nn.init.xavier_uniform_(layer.weight)
```

## Fix safety
Fixes are offered only where the replacement does the same thing:

- safe: `custom_fwd`/`custom_bwd` (to `torch.amp.custom_fwd(...,
  device_type="cuda")`, what the deprecated functions call; a bare
  decorator becomes `@torch.amp.custom_fwd(device_type="cuda")`), the old `nn.init` names, `clip_grad_norm`, `F.upsample` (each
  already calls its replacement with the same arguments), `torch.ger` (an
  alias of `torch.outer`), `GradScaler` with keyword arguments (the same
  defaults are passed on), `chain_matmul` of two or more matrices (to
  `torch.linalg.multi_dot([...])`), `qr(A)` and `cholesky(A)` without options,
  `lu_solve(B, LU, pivots)` (to `torch.linalg.lu_solve(LU, pivots, B)`), the
  collectives (each old name calls its new one with the same arguments), and
  a scheduler's `verbose=False`, dropped;
- unsafe: `autocast` with keyword arguments. The deprecated class passes
  `dtype=float16` (`bfloat16` on CPU) and `cache_enabled=True` itself,
  where `torch.amp.autocast` takes the process-wide settings, which are the
  same unless the program calls `torch.set_autocast_dtype` or
  `set_autocast_cache_enabled`; and a scheduler's `verbose=True` (or a
  value not written out), dropped, which stops the learning-rate printout
  on the versions that still print it.

TorchScript and `broadcast_buffers` get no fix: `torch.compile` and
`torch.export` do other things than `torch.jit`, and
`forward_sync_buffers=False`, unlike `broadcast_buffers=False`, still syncs
buffers once when the wrapper is built.

Positional arguments to `autocast`/`GradScaler` would shift (the device
comes first in `torch.amp`) and get no fix; nor do the functions whose
replacement returns something else or takes other arguments.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for call, change, _ in api_calls(file_model, DEPRECATED):
            message = f"{change.name} is deprecated{_since(change)}; use {change.replacement}"
            fix = None
            if change.rename:
                fix = _rename_fix(file_model, call, change)
            elif change.fix in _FIXES:
                fix = _FIXES[change.fix](file_model, call, change)
            yield self.report(call.node, message, fix=fix)
        # A keyword the target's torch no longer takes at all is TL701's (it raises there).
        for call, keyword_change, argument in keyword_calls(file_model, DEPRECATED_KEYWORDS,
                                                            superseded_by=REMOVED_KEYWORDS):
            yield self.report(call.node, f"{file_model.qualify(call)}({keyword_change.keyword}=...) is deprecated"
                              f"{_since(keyword_change)}; {keyword_change.replacement}",
                              fix=_drop_keyword_fix(call, keyword_change, argument))
        yield from self._bare_decorators(file_model)

    def _bare_decorators(self, file_model: FileModel) -> Iterator[Finding]:
        """``@torch.cuda.amp.custom_fwd`` or ``@torch.jit.script`` without a call: the decorator
        is called all the same."""
        for scope in file_model.scopes:
            if not isinstance(scope.node, cst.FunctionDef):
                continue
            for decorator in scope.node.decorators:
                written = dotted(decorator.decorator)
                change: Optional[ApiChange] = DEPRECATED.get(file_model.names.qualify(written) or "")
                if written is None or change is None or change.since > file_model.target_torch_version:
                    continue
                if head_rebound(file_model, written, scope.parent):
                    continue
                fix = self._decorator_fix(file_model, scope, written, decorator, change)
                yield self.report(decorator.decorator, f"{change.name} is deprecated{_since(change)}; "
                                  f"use {change.replacement}", fix=fix)

    @staticmethod
    def _decorator_fix(file_model: FileModel, scope: Scope, written: Optional[str], decorator: cst.Decorator,
                       change: ApiChange) -> Optional[Fix]:
        if change.fix != "amp_decorator":
            return None
        leaf = change.name.rsplit(".", 1)[1]
        renamed = renamed_reference(file_model, scope.parent, written, change.name, f"torch.amp.{leaf}")
        if renamed is None:
            return None
        func, imports = renamed
        return Fix(f'decorate with torch.amp.{leaf}(device_type="cuda")',
                   ((decorator.decorator, cst.Call(func=func, args=(_device_keyword(),))),),
                   imports=imports, applicability=Applicability.SAFE)

    valid = (
        """\
import torch


def train_step(model, batch, optimizer, scaler):
    with torch.amp.autocast("cuda", dtype=torch.float16):
        loss = model(batch).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


scaler = torch.amp.GradScaler("cuda")
""",
        """\
import torch
from torch import nn


def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        nn.init.constant_(module.bias, 0.0)


def schedule(epochs):
    return [epoch for epoch in range(epochs)]
""",
        """\
import numpy as np
import torch


def check(output, expected):
    np.testing.assert_allclose(output.numpy(), expected, rtol=1e-5)
    torch.testing.assert_close(output, torch.from_numpy(expected))
""",
        # The 1.13 names are the advice while the target is older than 2.13, and a scheduler's
        # verbose= from 2.7 on is TL701's (the argument is gone, not deprecated).
        """\
# target-torch-version: 2.7
import torch
import torch.distributed as dist


def gather(features, world_size):
    out = features.new_empty(world_size * features.shape[0], *features.shape[1:])
    dist.all_gather_into_tensor(out, features)
    return out


def build(optimizer):
    return torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, verbose=False)
""",
    )
    invalid = (
        """\
import torch

scaler = torch.cuda.amp.GradScaler()  # expect: TL702


def train_step(model, batch, optimizer):
    with torch.cuda.amp.autocast(enabled=True):  # expect: TL702
        loss = model(batch).mean()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
""",
        """\
import torch.nn as nn
import torch.nn.functional as F


def init_weights(module):
    nn.init.kaiming_normal(module.weight)  # expect: TL702


def upscale(images):
    return F.upsample(images, scale_factor=2, mode="nearest")  # expect: TL702
""",
        """\
import torch
from torch.cuda.amp import custom_bwd, custom_fwd


class ScaledMatmul(torch.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=torch.float16)  # expect: TL702
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    @custom_bwd  # expect: TL702
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad @ b.T, a.T @ grad
""",
        """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


@torch.jit.script  # expect: TL702
def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))


def wrap(model, rank):
    return DDP(model, device_ids=[rank], broadcast_buffers=False)  # expect: TL702


def gather(features, world_size):
    out = features.new_empty(world_size * features.shape[0], *features.shape[1:])
    dist._all_gather_base(out, features)  # expect: TL702
    return out


def export(model, example):
    traced = torch.jit.trace(model, example)  # expect: TL702
    torch.jit.save(traced, "model.ts")  # expect: TL702
""",
        """\
# target-torch-version: 2.4
import torch


def build(optimizer):
    return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "min", verbose=True)  # expect: TL702
""",
    )
