"""TL504: a custom autograd.Function keeps tensors as ``ctx.attr`` instead of ``save_for_backward``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Tuple

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.expr import dotted
from torchlint.model.tensors import TensorNames
from torchlint.needs import TensorKeptOnContext
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Scope
    from torchlint.rule import Finding

_FUNCTION_BASES = frozenset(
    f"torch.autograd.{module}{name}" for module in ("", "function.") for name in ("Function", "InplaceFunction")
)


def is_autograd_function(file_model: FileModel, cls: str, seen: Tuple[str, ...] = ()) -> bool:
    """``cls`` derives from torch.autograd.Function, directly or through classes of this file."""
    for base in file_model.class_bases.get(cls, ()):
        if file_model.names.qualify(base) in _FUNCTION_BASES:
            return True
        if base in file_model.class_bases and base not in seen and is_autograd_function(file_model, base, (*seen, cls)):
            return True
    return False


def _is_static(scope: Scope) -> bool:
    node = scope.node  # a method's
    return isinstance(node, cst.FunctionDef) and any(dotted(d.decorator) == "staticmethod" for d in node.decorators)


def _returned_names(scope: Scope, tensors: TensorNames) -> list:
    """(name, order of the return) for the outputs a forward visibly returns as tensors:
    a name returned alone (an autograd.Function's single output is a tensor) or a
    tensor-valued name among several (tuple outputs may hold non-tensors)."""
    out = []
    for site, value in scope.returns:
        if isinstance(value, cst.Name):
            out.append((value.value, site.order))
        elif isinstance(value, (cst.Tuple, cst.List)):
            known = tensors.known_at(site.order)
            out.extend((el.value.value, site.order) for el in value.elements
                       if isinstance(el.value, cst.Name) and el.value.value in known)
    return out


def is_output(scope: Scope, tensors: TensorNames, name: str, order: int) -> bool:
    """``name`` is returned with the value it had at ``order`` (no rebinding in between)."""
    for returned, at in _returned_names(scope, tensors):
        if returned == name and at > order and not any(
            order < a.order < at and any(dotted(t) == name for t in a.targets) for a in scope.assignments
        ):
            return True
    return False


class TensorOnCtx(Rule):
    code = "TL504"
    name = "tensor-on-ctx"
    message = (
        "custom autograd.Function stores a tensor as a ctx attribute: it escapes in-place "
        "modification checks and saved-tensor hooks, and an output kept this way leaks through a "
        "reference cycle; save tensors with ctx.save_for_backward and read ctx.saved_tensors"
    )
    computed_message = (
        "custom autograd.Function keeps a tensor computed in forward as a ctx attribute: saved-tensor "
        "hooks (activation offloading, save_on_cpu) and non-reentrant checkpointing never see it, so it "
        "stays in memory from forward to backward; save it with ctx.save_for_backward and read "
        "ctx.saved_tensors"
    )
    needs = TensorKeptOnContext()

    docs = """
## What it does
Finds `ctx.attr = tensor` in the `forward` of a custom
`torch.autograd.Function` (a class deriving from `torch.autograd.Function`,
however imported, or from such a class of the same file) when the tensor is
one of the forward's inputs (or a view of one: `x.contiguous()`, `x.t()`,
`x[0]`, `x.detach()`), the forward's output, or a tensor the forward
computes from its inputs with torch operations (`x.clamp(lo, hi)`,
`torch.exp(x)`, the mask `x > 0`, `x * scale`), directly or through a local
name (`y = x.clamp(0)`, then `ctx.y = y`).

## Why is this bad
`ctx.save_for_backward` is how a Function hands tensors to `backward`. It
records each tensor's version, so `backward` raises if the tensor was
modified in place in between, instead of computing a wrong gradient from
the modified values. It also frees the tensors after backward, applies
`torch.autograd.graph.saved_tensors_hooks` (activation offloading such as
`torch.autograd.graph.save_on_cpu`, non-reentrant `torch.utils.checkpoint`)
and handles outputs without a reference cycle.
A tensor stored as a plain attribute gets none of this: an in-place update of
the input after the forward silently changes the gradient, and an output
stored on `ctx` forms a cycle (output -> grad_fn -> ctx -> output) that
keeps the output and its graph alive until Python's garbage collector runs.
A tensor computed inside the forward and kept on `ctx` cannot be changed
in place by a caller and makes no cycle, but no saved-tensor hook ever sees
it: `save_on_cpu` leaves it on the GPU, and a non-reentrant checkpoint,
which frees what the forward saved and recomputes it in backward, keeps it
alive from forward to backward. PyTorch's documentation asks for every
tensor meant for backward to go through `save_for_backward` (intermediate
tensors included) for these reasons.

Only values that are clearly tensors are reported: an argument counts as a
tensor when the forward treats it as one (calls `x.size()`/`x.contiguous()`,
reads `x.device`, passes it first to a torch operation, saves it with
`save_for_backward`, annotates it `Tensor`); an output when the forward
returns it alone, or in a tuple when it is visibly a tensor; a computed
value when it is a torch operation, a tensor method, arithmetic, a
comparison or indexing on such a tensor. Not reported: shapes, sizes,
dtypes, devices, flags, scalars, strings and lists of ints on `ctx`
(`x.size(0)`, `x.shape`, `x.dim()`, `x.is_contiguous()`, `float(...)`,
`.item()`, `.tolist()`, `.numpy()`, list comprehensions); arguments with a
non-`None` default, a non-tensor annotation or an `isinstance` check, or
that the forward never treats as a tensor, and what is computed from them
alone; values from functions that are not torch operations (a compiled
extension's kernel, `torch.get_rng_state()`); Functions with a
`setup_context` method, and legacy non-static `forward` methods.

## Example
```python
class ScaledTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        out = torch.tanh(x * scale)
        ctx.out = out
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale * (1 - ctx.out ** 2), None
```

## Use instead
```python
class ScaledTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        out = torch.tanh(x * scale)
        ctx.save_for_backward(out)
        ctx.scale = scale  # a float: fine on ctx
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * ctx.scale * (1 - out ** 2), None
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for cls in file_model.class_bases:
            forward = file_model.methods.get((cls, "forward"))
            if forward is None or not forward.params or not _is_static(forward):
                continue
            if (cls, "setup_context") in file_model.methods or not is_autograd_function(file_model, cls):
                continue  # with setup_context, forward has no ctx
            yield from self._check_forward(file_model, forward)

    def _check_forward(self, file_model: FileModel, scope: Scope) -> Iterator[Finding]:
        ctx = scope.params[0]
        tensors = None
        for a in scope.assignments:
            if a.kind != "assign":
                continue
            stores = [value for target, value in _pairs(a) if dotted(target.value) == ctx]
            if not stores:
                continue
            tensors = tensors or TensorNames(file_model, scope, skip_params=1)
            if any(tensors.views_param(v) or (isinstance(v, cst.Name) and is_output(scope, tensors, v.value, a.order))
                   for v in stores):
                yield self.report(a.node)
            elif any(tensors.is_tensor(v, known) for known in (tensors.known_at(a.order),) for v in stores):
                # computed from the inputs by torch operations: no caller can modify it in place
                # and it makes no cycle, but no saved-tensor hook sees it
                yield self.report(a.node, message=self.computed_message)

    valid = (
        """\
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad
""",
        """\
import torch


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        ctx.shape = x.shape
        return x * factor

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None
""",
        """\
import torch
from sympy import Function


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return torch.square(x)
""",
        """\
import numpy as np
import torch
from scipy import special


class Quantize(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bits=8):
        levels = 2 ** bits - 1
        y = torch.round(x.clamp(0, 1) * levels) / levels
        ctx.n = x.size(0)
        ctx.shape = x.shape
        ctx.ndim = x.dim()
        ctx.peak = float(x.abs().max())
        ctx.mean = x.mean().item()
        ctx.contiguous = x.is_contiguous()
        ctx.values = y.unique().tolist()
        ctx.rng_state = torch.get_rng_state()
        ctx.inside = None
        inside = (x >= 0) & (x <= 1)
        ctx.save_for_backward(inside)
        return y

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside, None


class Erfcx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x_np = x.detach().cpu().numpy()  # scipy reads it in backward: an array, not a tensor
        return torch.from_numpy(special.erfcx(ctx.x_np)).to(x.device)

    @staticmethod
    def backward(ctx, grad):
        x = ctx.x_np
        d = 2 * x * special.erfcx(x) - 2 / np.sqrt(np.pi)
        return grad * torch.from_numpy(d).to(grad.device)
""",
    )
    invalid = (
        """\
import torch


class ReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x  # expect: TL504
        return torch.relu(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * (ctx.x > 0)
""",
        """\
import torch
from torch.autograd import Function


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.out = out  # expect: TL504
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.out
""",
        """\
import torch
import torch.autograd as ag
from torch.autograd.function import Function


class Clamp(ag.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x  # expect: TL504
        return torch.clamp(x, 0, 1)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.pow(x, 3)
        ctx.x, ctx.out = x, out  # expect: TL504
        return out
""",
        """\
import torch
from torch.autograd import Function


class GatedScale(Function):
    @staticmethod
    def forward(ctx, x, scale):
        gate = torch.sigmoid(x)
        ctx.gate, ctx.scale = gate, scale  # expect: TL504
        ctx.positive = x > 0  # expect: TL504
        ctx.clipped = x.clamp(-scale, scale) * scale  # expect: TL504
        return x * gate * scale

    @staticmethod
    def backward(ctx, grad):
        gate = ctx.gate
        return grad * ctx.scale * gate * (1 + ctx.clipped * (1 - gate)) * ctx.positive, None
""",
    )


def _pairs(a: Assignment) -> Iterator[Tuple[cst.Attribute, cst.BaseExpression]]:
    """(target, value) for ``ctx.x = x`` and for each item of ``ctx.x, ctx.w = x, w``."""
    for target in a.targets:
        if isinstance(target, cst.Attribute) and a.value is not None:  # (asked of assignments)
            yield target, a.value
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(a.value, (cst.Tuple, cst.List)) and len(
            target.elements) == len(a.value.elements):
            for t, v in zip(target.elements, a.value.elements):
                if isinstance(t.value, cst.Attribute):
                    yield t.value, v.value
