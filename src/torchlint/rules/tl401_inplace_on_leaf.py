"""TL401: an in-place write to a leaf tensor that requires grad."""
from __future__ import annotations

import ast

import libcst as cst

from torchlint.model import FileModel, GradMode
from torchlint.model.expr import bound_paths, dotted, keyword, literal_bool
from torchlint.model.vocab import PARAMETER_ITERATORS
from torchlint.rule import Rule
from torchlint.tree_gate import TreeIndex, called_name

# In-place by name (trailing underscore) but harmless on a leaf.
_NOT_WRITES = frozenset("requires_grad_ share_memory_ detach_ retain_grad_ record_stream_".split())
_PARAM_ITERATORS = {"parameters": None, "named_parameters": 1}


def _makes_leaf(file_model: FileModel, value) -> bool:
    """``nn.Parameter(...)``, ``torch.zeros(..., requires_grad=True)``, ``x.requires_grad_()``."""
    if not isinstance(value, cst.Call):
        return False
    callee = dotted(value.func) or ""
    if callee.rsplit(".", 1)[-1] == "Parameter":
        return True
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "requires_grad_":
        flag = value.args[0].value if value.args else None
        return (flag is None or literal_bool(flag) is True) and _is_factory(file_model, value.func.value)
    return _is_factory(file_model, value) and literal_bool(keyword(value, "requires_grad")) is True


def _is_factory(file_model: FileModel, value) -> bool:
    return isinstance(value, cst.Call) and file_model.names.qualify(dotted(value.func)) is not None


def leaf_bindings(file_model: FileModel, scope) -> dict:
    """path -> [(order, is a leaf that requires grad)] for every binding in ``scope``.

    Kept in order so a write sees the binding that reaches it:
    ``x = torch.ones(2); x.add_(1); x = torch.ones(2, requires_grad=True)`` is fine.
    """
    bindings = {}
    for a in scope.assignments:
        if a.kind == "aug" or a.kind == "del":
            continue
        leaves = set()
        if a.kind == "assign" and _makes_leaf(file_model, a.value):
            leaves = {p for p in map(dotted, a.targets) if p}
        elif a.kind == "for" and isinstance(a.value, cst.Call):
            leaves = _parameter_targets(a)
        for target in a.targets:
            for path in bound_paths(target):
                bindings.setdefault(path, []).append((a.order, path in leaves))
    return bindings


def _parameter_targets(a) -> set:
    """``p`` in ``for p in model.parameters()`` / ``for name, p in m.named_parameters()``."""
    method = a.value.func.attr.value if isinstance(a.value.func, cst.Attribute) else None
    if method not in _PARAM_ITERATORS:
        return set()
    target = a.targets[0]
    index = _PARAM_ITERATORS[method]
    if index is not None and isinstance(target, (cst.Tuple, cst.List)):
        target = target.elements[index].value if len(target.elements) > index else None
    path = dotted(target) if target is not None else None
    return {path} if path else set()


def is_leaf_at(bindings: dict, path: str, order: int) -> bool:
    reaching = [leaf for at, leaf in bindings.get(path, ()) if at < order]
    return bool(reaching) and reaching[-1]


def class_parameters(file_model: FileModel, cls) -> set:
    """``self.w`` attributes a method of ``cls`` binds to an ``nn.Parameter``."""
    found = set()
    for scope in file_model.scopes:
        if scope.class_name == cls:
            for path, seen in leaf_bindings(file_model, scope).items():
                if path.startswith("self.") and any(leaf for _, leaf in seen):
                    found.add(path)
    return found


def _import_time_leaf_writes(tree_index: TreeIndex) -> bool:
    """For the tree gate: a leaf made and written in place when the module runs (scripts, notebooks)."""
    nodes = tree_index.import_time_nodes()
    return any(map(_writes_in_place, nodes)) and any(map(_makes_a_leaf, nodes))


def _writes_in_place(node: ast.AST) -> bool:
    """``w.add_(1)``, ``w -= g``, ``w[0] = 0``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        attr = node.func.attr
        return attr.endswith("_") and not attr.startswith("_")
    if isinstance(node, ast.AugAssign):
        return True
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets)


def _makes_a_leaf(node: ast.AST) -> bool:
    """``nn.Parameter(...)``, ``requires_grad=True``, ``.requires_grad_()``, ``for p in m.parameters()``."""
    if isinstance(node, ast.Call):
        return (called_name(node) in ("Parameter", "requires_grad_")
                or any(k.arg == "requires_grad" for k in node.keywords))
    if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call):
        return called_name(node.iter) in PARAMETER_ITERATORS
    return False


class InplaceOnLeaf(Rule):
    code = "TL401"
    name = "inplace-on-leaf"
    message = (
        "in-place operation on a leaf tensor that requires grad raises at run time; do it "
        "under `with torch.no_grad():` (or on a copy)"
    )
    gate = (r"requires_grad|Parameter\(|parameters\(\)", r"_\(|\+=|-=|\*=|/=|\]\s*=[^=]")

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        # Only module-level code and functions that compute gradients are checked.
        return tree_index.computes_gradients() or _import_time_leaf_writes(tree_index)

    docs = """
## What it does
Finds in-place writes (`w.add_(...)`, `w -= lr * w.grad`, `w[0] = 0`,
`p.clamp_(...)`) to leaf tensors that require grad: tensors created with
`requires_grad=True`, `nn.Parameter`s and the parameters of a model, outside
`torch.no_grad()`, in code that runs with grad enabled (a function that also
calls `backward()`, or module-level script code).

## Why is this bad
Autograd cannot track an in-place change of a leaf it will accumulate a
gradient into: the call raises `RuntimeError: a leaf Variable that requires
grad is being used in an in-place operation`. The usual cause is a manual
update (SGD by hand, weight clipping, re-initialisation) written outside
`torch.no_grad()`. Working around it with `.data` hides the update from
autograd's version checks.

Not reported: the same writes under `torch.no_grad()` or in a function
decorated with it, `nn.init.*_` functions (they use `no_grad` inside),
writes to `.grad` or `.data`, and in-place ops on tensors that do not require
grad. Writes in functions that never compute gradients (weight init,
optimizer `step` methods) are not reported either: whether grad is enabled
there depends on callers torchlint cannot see.

## Example
```python
w = torch.randn(3, requires_grad=True)
for x, y in data:
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    w -= 0.1 * w.grad
    w.grad.zero_()
```

## Use instead
```python
w = torch.randn(3, requires_grad=True)
for x, y in data:
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
```
"""

    def check(self, file_model: FileModel):
        if not file_model.is_torch_code or file_model.is_test_file:
            return
        params_of = {}
        for scope in file_model.scopes:
            if not self._grad_enabled_code(file_model, scope):
                continue
            bindings = leaf_bindings(file_model, scope)
            cls = file_model.enclosing_class(scope)
            if cls is not None and cls not in params_of:
                params_of[cls] = class_parameters(file_model, cls)
            params = params_of.get(cls, set())
            for node, path, site in self._writes(scope):
                if path is None or file_model.grad_at(site) is not GradMode.GRAD:
                    continue
                if is_leaf_at(bindings, path, site.order) or (path in params and path not in bindings):
                    yield self.report(node)

    @staticmethod
    def _grad_enabled_code(file_model: FileModel, scope) -> bool:
        """Code whose grad mode we know: module level, or a function that computes gradients."""
        if scope.is_module:
            return True
        return any(file_model.is_backward(c) or file_model.is_autograd_grad(c) for c in scope.calls)

    @staticmethod
    def _writes(scope):
        for call in scope.calls:
            method = call.method or ""
            if (call.receiver and method.endswith("_") and not method.startswith("_")
                    and method not in _NOT_WRITES):
                yield call.node, call.receiver, call.site
        for a in scope.assignments:
            if a.kind == "aug":
                yield a.node, dotted(a.targets[0]), a.site
            elif a.kind == "assign":
                for t in a.targets:
                    if isinstance(t, cst.Subscript):
                        yield a.node, dotted(t.value), a.site

    valid = (
        """\
import torch


def sgd_step(model, x, y, lr=0.01):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)
            p.grad = None
""",
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        with torch.no_grad():
            self.fc.bias.zero_()
""",
        """\
import torch

x = torch.randn(8, 3)
mask = torch.ones(8, 3)
mask[0] = 0
x *= mask
""",
    )
    invalid = (
        """\
import torch

w = torch.randn(3, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8)
for _ in range(100):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    w -= 0.1 * w.grad  # expect: TL401
    w.grad.zero_()
""",
        """\
import torch


def sgd_step(model, x, y, lr=0.01):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)  # expect: TL401
        p.grad = None
""",
    )
