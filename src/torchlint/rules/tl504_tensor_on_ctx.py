"""TL504: a custom autograd.Function keeps tensors as ``ctx.attr`` instead of ``save_for_backward``."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, Tuple

import libcst as cst

from torchlint import tree_gate
from torchlint.model import FileModel
from torchlint.model.expr import dotted
from torchlint.model.tensors import (
    TENSOR_ATTRS,
    TENSOR_ONLY_ATTRS,
    TENSOR_ONLY_METHODS,
    VIEW_METHODS,
    TensorNames,
    returns_no_tensor,
)
from torchlint.rule import Rule
from torchlint.tree_gate import TreeIndex

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
    gate = (r"Function", r"ctx\.\w+\s*(:[^=]*)?=[^=]")

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        """A static ``forward`` that stores on its first argument something that may be an
        argument, a view of one, an output, or a tensor computed from them."""
        return any(_may_store_a_tensor(tree_index, function) for function in tree_index.definitions.get("forward", ()))
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


def _may_store_a_tensor(tree_index: TreeIndex, function: ast.FunctionDef) -> bool:
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = function.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if not positional or not any(tree_gate.dotted(d) == "staticmethod" for d in function.decorator_list):
        return False
    ctx, *params = positional
    params += [a.arg for a in (*arguments.kwonlyargs, arguments.vararg, arguments.kwarg) if a is not None]
    nodes = tree_index.nodes_of(function.body)
    names = set(params) | {n.id for r in nodes if isinstance(r, ast.Return) and r.value is not None
                           for n in (r.value.elts if isinstance(r.value, (ast.Tuple, ast.List)) else [r.value])
                           if isinstance(n, ast.Name)}
    maybe_tensors = None
    for node in nodes:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if not any(_on(t, ctx) for t in targets) or node.value is None:
            continue
        if _views(node.value, names):
            return True
        if maybe_tensors is None:
            maybe_tensors = _maybe_tensor_names(function, params, nodes)
        if _may_compute_a_tensor(node.value, maybe_tensors):
            return True
    return False


def _maybe_tensor_names(function: ast.FunctionDef, params: list, nodes: list) -> set:
    """Every name ``TensorNames`` may take for a tensor, and more: each name the forward
    binds, and each argument it uses as ``TensorNames`` looks for (its evidence, widened:
    any annotation, any argument of any call, ``@``, a tensor-only method or attribute)."""
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    evidence = set()
    arguments = function.args
    for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if a.annotation is not None:
            evidence.add(a.arg)
    for node in ast.walk(function):  # TensorNames reads nested bodies for attributes
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.attr in TENSOR_ONLY_METHODS or node.attr in TENSOR_ONLY_ATTRS):
            evidence.add(node.value.id)
        elif isinstance(node, ast.Call):
            evidence.update(a.id for a in node.args if isinstance(a, ast.Name))
            evidence.update(a.value.id for a in node.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            evidence.update(n.id for n in (node.left, node.right) if isinstance(n, ast.Name))
    return bound | (evidence & set(params))


_COMPARISONS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq, ast.NotEq)


def _may_compute_a_tensor(value: ast.expr, names: set) -> bool:
    """What ``TensorNames.is_tensor`` may call a tensor, and more: a torch operation is any
    call with an argument that may be a tensor."""
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.Attribute):
        return value.attr in TENSOR_ATTRS and _may_compute_a_tensor(value.value, names)
    if isinstance(value, ast.Subscript):
        return _may_compute_a_tensor(value.value, names)
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and not returns_no_tensor(func.attr) and _may_compute_a_tensor(
                func.value, names):
            return True
        return any(_may_compute_a_tensor(a.value if isinstance(a, ast.Starred) else a, names) for a in value.args) or any(
            _may_compute_a_tensor(k.value, names) for k in value.keywords)
    if isinstance(value, ast.BinOp):
        return _may_compute_a_tensor(value.left, names) or _may_compute_a_tensor(value.right, names)
    if isinstance(value, ast.UnaryOp):
        return not isinstance(value.op, ast.Not) and _may_compute_a_tensor(value.operand, names)
    if isinstance(value, ast.Compare):
        return all(isinstance(op, _COMPARISONS) for op in value.ops) and any(
            _may_compute_a_tensor(v, names) for v in (value.left, *value.comparators))
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(_may_compute_a_tensor(v.value if isinstance(v, ast.Starred) else v, names) for v in value.elts)
    if isinstance(value, ast.IfExp):
        return _may_compute_a_tensor(value.body, names) or _may_compute_a_tensor(value.orelse, names)
    return False


def _on(target: ast.expr, ctx: str) -> bool:
    """``ctx.x``, or a tuple or list of targets with one."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_on(t, ctx) for t in target.elts)
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == ctx


def _views(value: ast.expr, names: set) -> bool:
    """Is ``value`` one of ``names`` (the arguments and returned names) or a view of one
    (``x.t()``, ``x[0]``, one in a tuple)? What ``TensorNames.views_param`` and ``is_output``
    need, and more."""
    while True:
        if isinstance(value, ast.Name):
            return value.id in names
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(_views(v, names) for v in value.elts)
        if isinstance(value, ast.Attribute) and value.attr in TENSOR_ATTRS or isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in VIEW_METHODS:
            value = value.func.value
        else:
            return False


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
