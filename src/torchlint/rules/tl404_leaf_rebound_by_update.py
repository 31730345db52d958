"""TL404: ``w = w - lr * w.grad`` outside no_grad turns the leaf into a graph node."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Tuple, Union
import libcst as cst

from torchlint.model import FileModel, GradMode
from torchlint.model.expr import bound_paths, dotted, keyword, referenced_paths
from torchlint.model.leaves import is_leaf_factory, known_grad_scope, method_chain
from torchlint.model.vocab import FRESH_METHODS, PARAMETER_ITERATORS
from torchlint.rule import Rule
from torchlint.needs import BACKWARD, Text

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Loop, Scope
    from torchlint.rule import Finding

_STEP_METHODS = frozenset(("sub", "add"))
# After the update, one of these makes the name a leaf again (``w.detach_()``).
_RELEAF_CALLS = frozenset(("detach_",))


def _reads_grad(expr: cst.BaseExpression, path: str) -> bool:
    grad = path + ".grad"
    return any(p == grad or p.startswith(grad + ".") for p in referenced_paths(expr))


def is_gradient_step(value: cst.BaseExpression, path: str) -> bool:
    """``w - lr * w.grad``, ``w + (-lr) * w.grad``, ``w.sub(lr * w.grad)``, ``w.add(w.grad, alpha=-lr)``."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Subtract, cst.Add)):
        return dotted(value.left) == path and _reads_grad(value.right, path)
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if value.func.attr.value in _STEP_METHODS and dotted(value.func.value) == path:
            return any(_reads_grad(arg.value, path) for arg in value.args)
    return False


def _pairs(a: Assignment) -> Iterator[Tuple[str, cst.BaseExpression]]:
    """``(path, value)`` for each name an assignment rebinds; ``w, b = w - .., b - ..`` gives two."""
    if len(a.targets) != 1:
        return
    target, value = a.targets[0], a.value
    if isinstance(target, (cst.Tuple, cst.List)):
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(target.elements):
            for el, val in zip(target.elements, value.elements):
                path = dotted(el.value)
                if path:
                    yield path, val.value
        return
    path = dotted(target)
    if path and value is not None:  # (asked of assignments, which have one)
        yield path, value


class LeafReboundByUpdate(Rule):
    code = "TL404"
    name = "leaf-rebound-by-update"
    message = (
        "`w = w - lr * w.grad` outside no_grad makes w a non-leaf: its .grad is None next step and "
        "every step's graph is kept; update in place under `with torch.no_grad(): w -= lr * w.grad`"
    )
    torch_programs_only = True
    needs = Text(r"\.grad\b") & (BACKWARD | Text("autograd"))
    docs = """
## What it does
Finds a hand-written gradient step that rebinds the name of a leaf tensor,
`w = w - lr * w.grad` (also `w = w.sub(lr * w.grad)`, `w = w + (-lr) *
w.grad`, and tuples such as `w, b = w - lr * w.grad, b - lr * b.grad`),
while autograd records: outside `torch.no_grad()`, in code that surely runs
with grad enabled (module-level script code, a function that calls
`backward()`, or one whose callers in the file all record). A module-level
leaf that a step function rebinds through `global w` is reported when a
loop that backpropagates calls the function, every call records, and
nothing makes `w` a leaf again: the next call is the next step.

## Why is this bad
The subtraction is recorded: the new `w` is not a leaf but the output of a
graph that reaches back to the old `w`. Its `.grad` stays `None` after the
next `backward()` (the gradient goes to the old leaf), so the next update
fails with `unsupported operand type(s) for *: 'float' and 'NoneType'` or
silently uses a stale gradient, and each step's graph hangs on the next one,
so memory grows with every step. In a loop over `model.parameters()` the
rebinding changes only the loop variable and the model is never updated.

Not reported: the same update under `torch.no_grad()`; in-place updates
(`w -= lr * w.grad` under `no_grad`, TL401 covers them outside it); `w.data
= w.data - lr * w.grad.data`; an update wrapped in
`(...).detach().requires_grad_()` or followed in the same block by
`w = w.detach().requires_grad_()` or `w.detach_()`; functional and
meta-learning code that keeps the graph on purpose (`fast = [w - lr * g for
w, g in zip(weights, grads)]` with `autograd.grad(..., create_graph=True)`,
or any function that asks for `create_graph`).

## Example
```python
w = torch.randn(3, 1, requires_grad=True)
for x, y in batches:
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    w = w - lr * w.grad
```

## Use instead
```python
w = torch.randn(3, 1, requires_grad=True)
for x, y in batches:
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
    w.grad = None
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for scope in file_model.scopes:
            updates = [(a, path) for a in scope.assignments if a.kind == "assign"
                       for path, value in _pairs(a) if is_gradient_step(value, path)]
            if not updates or not known_grad_scope(file_model, scope) or _higher_order(scope):
                continue
            reported = set()  # ``w, b = w - .., b - ..`` is one finding
            for a, path in updates:
                if id(a) in reported or file_model.grad_at(a.site) is not GradMode.GRAD:
                    continue
                loop = _training_loop(file_model, a)
                if loop is None:
                    # One step and done (FGSM): there is no next step to break, unless the
                    # name is module state and the next step is the next call.
                    if _next_call_steps_again(file_model, scope, a, path):
                        reported.add(id(a))
                        yield self.report(a.node)
                    continue
                if not _made_leaf_again(file_model, scope, a, path, loop):
                    reported.add(id(a))
                    yield self.report(a.node)

    valid = (
        """\
import torch

w = torch.randn(3, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8)
for _ in range(100):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w = w - 0.1 * w.grad
    w.requires_grad_()
""",
        """\
import torch


def inner_loop(model_fn, w, x, y, inner_lr=0.01, steps=5):
    fast_w = w
    for _ in range(steps):
        loss = ((model_fn(x, fast_w) - y) ** 2).mean()
        (grad,) = torch.autograd.grad(loss, fast_w, create_graph=True)
        fast_w = fast_w - inner_lr * grad
    return fast_w
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
    w = w - 0.1 * w.grad  # expect: TL404
""",
        """\
import torch


def fit(x, y, w, b, lr=0.1, steps=100):
    for _ in range(steps):
        loss = ((x @ w + b - y) ** 2).mean()
        loss.backward()
        w, b = w - lr * w.grad, b - lr * b.grad  # expect: TL404
    return w, b
""",
    )


def _higher_order(scope: Scope) -> bool:
    """``create_graph=True`` anywhere in the function: differentiating through the update is the point."""
    return any(keyword(c.node, "create_graph") is not None for c in scope.calls)


def _training_loop(file_model: FileModel, update: Assignment) -> Optional[Loop]:
    """The innermost loop around the update that also backpropagates: the "next step"."""
    loop = update.site.loop
    while loop is not None and not file_model.loop_role(loop).backward and not any(
            file_model.is_autograd_grad(c) for c in file_model.loop_role(loop).calls):
        loop = loop.parent
    return loop


def _next_call_steps_again(file_model: FileModel, scope: Scope, update: Assignment, path: str) -> bool:
    """``global W`` then ``W = W - lr * W.grad`` in a step function a training loop calls:
    the rebinding outlives the call, and the next call backpropagates through the non-leaf.
    Every call records (none under ``no_grad``), one stands in a loop that backpropagates
    (in the function or around the call), and nothing makes the name a leaf again, in the
    function or in that loop."""
    if scope.is_module or path not in scope.global_names:
        return False
    callers = file_model.callers.get(scope, ())
    if not callers or any(file_model.grad_at(c.site) is not GradMode.GRAD for c in callers):
        return False
    if _made_leaf_again(file_model, scope, update, path, scope):
        return False
    loops = [c.site.loop for c in callers if c.site.loop is not None]
    return any(file_model.loop_role(loop).backward and not _made_leaf_again(file_model, loop.scope, update, path, loop)
               for loop in loops)


def _made_leaf_again(file_model: FileModel, scope: Scope, update: Assignment, path: str,
                     loop: Union[Loop, Scope]) -> bool:
    """Somewhere in the loop the name becomes a leaf again before the next backward:
    ``w = w.detach().requires_grad_()``, ``w = Variable(w.data, ...)``, ``w.detach_()``,
    a fresh binding each iteration (``for x, y in loader``, ``x_adv = x.clone()``), or
    ``w.requires_grad = True``, which raises on a non-leaf, so working code re-leafs it.
    ``loop``: the update's ``_training_loop``; or a loop calling the function that updates
    module state, or that function itself (then "the loop" is one call)."""
    for a in scope.assignments:
        if a is update or not loop.contains(a.order):
            continue
        if a.kind == "for" and path in {p for t in a.targets for p in bound_paths(t)}:
            if not _iterates_parameters(a.value):
                return True
        if a.kind != "assign":
            continue
        if any(isinstance(t, cst.Attribute) and dotted(t) == path + ".requires_grad" for t in a.targets):
            return True
        for bound, value in _pairs(a):
            if bound == path and _fresh(file_model, value, path):
                return True
    return any(c.receiver == path and c.method in _RELEAF_CALLS and loop.contains(c.order) for c in scope.calls)


def _fresh(file_model: FileModel, value: cst.BaseExpression, path: str) -> bool:
    _, methods = method_chain(value)
    if any(m in FRESH_METHODS for m in methods) or is_leaf_factory(file_model, value):
        return True
    return path not in set(referenced_paths(value)) and not is_gradient_step(value, path)


def _iterates_parameters(value: Optional[cst.BaseExpression]) -> bool:
    """``for p in model.parameters()``: rebinding ``p`` never updates the model."""
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in PARAMETER_ITERATORS)
