"""TL302: retain_graph=True in a loop keeps every iteration's graph alive."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Tuple

import libcst as cst

from torchlint.model import FileModel, Span, differentiated
from torchlint.model.expr import bound_paths, dotted, keyword, literal_bool
from torchlint.model.leaves import argument_at_calls
from torchlint.edits import without_arg
from torchlint.model.project_calls import argument, project_function, retains_graph
from torchlint.model.vocab import (
    GRAPH_FREE_FACTORIES, OPTIMIZER_WORD, is_loader_name, is_model_name, is_optimizer_name,
)
from torchlint.needs import TRAINS, LoopCallsImported, Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, CallSite, Loop
    from torchlint.rule import Finding


def _later_backward(file_model: FileModel, call: CallSite, loop: Loop) -> bool:
    """Another backward through the graph later in the same iteration (maybe in a helper)."""
    for later in file_model.calls_between(call.order + 1, loop.end):
        if file_model.is_differentiation(later):
            return True
        target = file_model.resolve(later)
        if target is not None and any(
            file_model.is_differentiation(c) for c in file_model.reachable_calls(target)
        ):
            return True
    return False


def graph_roots(expr: Optional[cst.BaseExpression]) -> set:
    """The variables a backward starts from: ``output`` in ``output[0][i]``,
    ``loss`` in ``scaler.scale(loss)`` (with ``scaler``), both sides of ``a + b``."""
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, (cst.Attribute, cst.Subscript)):
        return graph_roots(expr.value)
    if isinstance(expr, cst.Call):
        roots = graph_roots(expr.func.value) if isinstance(expr.func, cst.Attribute) else set()
        for arg in expr.args:
            roots |= graph_roots(arg.value)
        return roots
    if isinstance(expr, cst.BinaryOperation):
        return graph_roots(expr.left) | graph_roots(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return graph_roots(expr.expression)
    return set()


def graph_origin(call: CallSite, loop: Loop) -> Tuple[bool, bool]:
    """Where the graph a retained backward differentiates comes from, as (shared, carried).

    shared: a tensor computed before the loop (a shared trunk, a Jacobian's
    output); every iteration differentiates that same graph and needs it kept.
    carried: a tensor the loop feeds back into itself (an RNN hidden state, a
    running total); each iteration's graph then links to the previous one.
    """
    source = differentiated(call)
    if source is None:
        return False, False
    return _origin_of(graph_roots(source), loop)


def _origin_of(roots: set, loop: Loop) -> Tuple[bool, bool]:
    """``graph_origin`` for the graph that starts from the variables ``roots``."""
    targets = set(bound_paths(loop.node.target)) if isinstance(loop.node, cst.For) else set()
    inside: Dict[str, List[Assignment]] = {}
    before: Dict[str, List[Assignment]] = {}
    for a in loop.scope.assignments:
        if a.order >= loop.end:
            continue
        for target in a.targets:
            for path in bound_paths(target):
                (inside if loop.contains(a.order) else before).setdefault(path, []).append(a)
    carried = False
    todo, seen = list(roots), set()
    while todo:
        root = todo.pop()
        if root in seen:
            continue
        seen.add(root)
        if root in targets:  # for loss in (loss_a, loss_b): loss.backward(...)
            todo.extend(graph_roots_of_iter(loop.iter))
        elif root in inside:  # built in this iteration: look at what it was built from
            found = [a for a in inside[root] if a.kind != "for"]
            carried |= root in before and bool(found) or any(a.kind == "aug" for a in found)
            for a in found:
                if a.value is not None:
                    todo.extend(graph_roots(a.value))
        elif root in before and _computed(before[root][-1].value):
            return True, carried
    return False, carried


def graph_roots_of_iter(expr: Optional[cst.BaseExpression]) -> set:
    if isinstance(expr, (cst.Tuple, cst.List)):
        return set().union(*(graph_roots(el.value) for el in expr.elements)) if expr.elements else set()
    if isinstance(expr, cst.Call) and dotted(expr.func) in ("zip", "enumerate"):
        return set().union(*(graph_roots_of_iter(arg.value) for arg in expr.args)) if expr.args else set()
    return graph_roots(expr)


_NOT_TENSOR_BUILTINS = frozenset("len int float range list dict tuple set str bool zip enumerate".split())


def _computed(value: Optional[cst.BaseExpression]) -> bool:
    """Returned by a computation (``model.trunk(x)``, ``autograd.grad(...)[0]``), not a
    class instance, a literal or a constant; those never carry a graph to share."""
    while isinstance(value, (cst.Subscript, cst.Attribute)):
        value = value.value
    if not isinstance(value, cst.Call):
        return False
    name = (dotted(value.func) or "").rsplit(".", 1)[-1]
    return not name[:1].isupper() and name not in _NOT_TENSOR_BUILTINS and name not in GRAPH_FREE_FACTORIES


def _drop_retain_graph(file_model: FileModel, node: cst.Call, loop: Loop) -> Optional[Fix]:
    """Remove ``retain_graph=True``, unless the loop carries recurrent state (TL303's
    ``out, h = rnn(x, h)``): the next backward then goes through this graph."""
    from torchlint.model.carry import Flow, carried_states

    if carried_states(file_model, Flow(file_model), loop.scope, loop):
        return None
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "retain_graph":
            return Fix("remove `retain_graph=True`", ((node, without_arg(node, arg)),))
    return None


def _called_in_a_training_loop(file_model: FileModel, call: CallSite) -> bool:
    """A function (or method) of this file whose last backward retains the graph it built
    itself, called from a loop that steps an optimizer or links its iterations."""
    scope = call.scope
    if scope.is_module or not file_model.is_backward(call):
        return False
    if any(file_model.is_differentiation(c)
           for c in file_model.reachable_calls(Span(call.order + 1, scope.end))):
        return False
    source = differentiated(call)
    roots = graph_roots(source) if source is not None else set()
    local = {p for a in scope.assignments for t in a.targets for p in bound_paths(t)}
    handed = roots & set(scope.params)
    if not roots or not roots <= local | handed:
        return False
    if handed:  # a graph the caller hands in (``step(loss, opt)``): read at each call
        return _handed_graph_kept(file_model, call, handed)
    for caller in file_model.callers.get(scope, ()):
        loop = caller.site.loop
        if loop is None or _later_backward(file_model, caller, loop) or _later_project_gradients(
                file_model, caller, loop):
            continue
        shared, carried = _origin_of(_tensor_roots(file_model, caller), loop)
        if not shared and (carried or file_model.loop_role(loop).steps):
            return True
    return False


def _handed_graph_kept(file_model: FileModel, backward: CallSite, params: set) -> bool:
    """``def step(loss, opt): loss.backward(retain_graph=True)`` keeps the graph of what its
    callers hand it. Kept for nothing when no call needs it again: no other gradient
    computation in the caller's iteration (or after the call, outside loops), no graph
    shared from before the loop; a leak when some caller's loop steps an optimizer or
    links its iterations. A graph one call needs kept (``step(loss_a); step(loss_b)``
    through one trunk) needs it at every call: then nothing is reported."""
    bound = [argument_at_calls(file_model, backward.scope, param) for param in sorted(params)]
    if not bound[0]:
        return False  # no caller here: the callers elsewhere may share the graph
    leaks = False
    for i, (caller, _) in enumerate(bound[0]):
        # Defaults hand nothing per call; every call binds the same parameters in the same order.
        values = [value for at_calls in bound for _, value in at_calls[i:i + 1] if value is not None]
        if not values or _other_gradients(file_model, caller, backward):
            return False
        loop = caller.site.loop
        if loop is None:
            continue
        roots = _tensor_roots_of(file_model, values)
        shared, carried = _origin_of(roots, loop)
        if shared or not _bound_in(roots, loop):
            return False
        leaks |= carried or bool(file_model.loop_role(loop).steps)
    return leaks


def _bound_in(roots: set, loop: Loop) -> bool:
    """Each of ``roots`` is bound in the loop's every iteration: not a graph the loop only
    reads (a parameter of its function, a tensor made before it), which every iteration
    differentiates again and so must keep."""
    bound = {p for a in loop.scope.assignments if loop.contains(a.order) for t in a.targets for p in bound_paths(t)}
    return bool(roots) and roots <= bound


def _other_gradients(file_model: FileModel, call: CallSite, backward: Optional[CallSite] = None) -> bool:
    """Another gradient computation that may go through the graph ``call`` hands on: anywhere
    in its loop's iteration (another call of the same function included), or after it in its
    function when it is in no loop. ``backward``: the one ``call`` reaches itself, if any."""
    loop = call.site.loop
    if loop is None:
        calls = file_model.reachable_calls(Span(call.order + 1, call.scope.end))
    else:
        calls = file_model.reachable_calls(loop)
        if backward is not None and sum(file_model.resolve(c) is backward.scope for c in calls) > 1:
            return True
    for other in calls:
        if other is backward or other is call:
            continue
        if file_model.is_differentiation(other):
            return True
        does = project_function(file_model, other)
        if does is not None and does.needs_grad:
            return True
    return False


def _later_project_gradients(file_model: FileModel, call: CallSite, loop: Loop) -> bool:
    """A later call in the iteration of a project function that computes gradients: it may
    backpropagate through the graph kept for it (a GAN's generator step after the critic's)."""
    return any((does := project_function(file_model, later)) is not None and does.needs_grad
               for later in file_model.calls_between(call.order + 1, loop.end))


def _tensor_roots(file_model: FileModel, call: CallSite) -> set:
    """The variables a call's arguments start from, models, optimizers, loaders and devices
    aside: a tensor among them computed before the loop (``feats = trunk(x)``, then
    ``fit_head(head, feats)`` per head) is a graph every call may share, and must keep."""
    return _tensor_roots_of(file_model, [a.value for a in call.node.args])


def _tensor_roots_of(file_model: FileModel, values: list) -> set:
    """``_tensor_roots`` of the expressions ``values``."""
    roots = set().union(*(graph_roots(v) for v in values)) if values else set()
    return {r for r in roots if not (
        r in file_model.roles.models or r in file_model.roles.criteria or file_model.is_optimizer(r)
        or is_model_name(r) or is_loader_name(r) or "device" in r.lower())}


_CALLED_MESSAGE = ("backward(retain_graph=True) in a function called in a training loop keeps each "
                   "iteration's graph alive into the next; drop retain_graph unless another backward in "
                   "the iteration uses the graph")
_HELPER_MESSAGE = ("`{}` (a function of this project) calls backward(retain_graph=True) and is called in a "
                   "loop: each iteration's graph stays alive into the next; drop retain_graph there unless "
                   "another backward in this iteration uses the graph")


class RetainGraphInLoop(Rule):
    code = "TL302"
    name = "retain-graph-in-loop"
    message = (
        "backward(retain_graph=True) in a loop keeps the graph's saved tensors alive into the "
        "next iteration; drop retain_graph unless another backward in this iteration uses the graph"
    )
    fix_safety = "unsafe"
    torch_programs_only = True
    asked_when_parsed = True  # its check costs more than its question where that says no
    # retain_graph=True, or a loop calling a function imported from another module of the
    # project (which may retain it) in a file that trains, or handing it an optimizer.
    needs = (Text(r"retain_graph\s*=\s*True") | (TRAINS & LoopCallsImported())
             | LoopCallsImported(handing=is_optimizer_name, spelled=OPTIMIZER_WORD))
    docs = """
## What it does
Finds `backward(retain_graph=True)` (and `torch.autograd.grad(...,
retain_graph=True)`) inside a loop when nothing later in the same iteration
backpropagates through that graph again. The same goes for a function's last
`backward(retain_graph=True)` on a graph it built itself, when a training
loop calls the function, and on a loss its caller hands it (`def step(loss,
opt): loss.backward(retain_graph=True)`), when the loop builds that loss
afresh each iteration and no call needs the graph again: reported at the
backward for a function of the same file, at the call for a function of
another module of the project (one the file imports: `from .engine import
train_step`).

## Why is this bad
`retain_graph=True` keeps the graph's saved tensors (the activations) after
the backward pass. In a loop they stay alive until the graph becomes
unreachable: at best when the next iteration rebinds `loss`, so the next
forward pass runs with the previous one's activations still in memory (up to
twice the peak); when something links the iterations (an RNN hidden state, a
running total), every graph stays and memory grows until out-of-memory. It is often added to silence "Trying to backward through the
graph a second time", which signals a tensor carried across iterations that
should have been detached.

Reported in training loops (an optimizer steps in the iteration) and in any
loop that feeds a graph tensor back into itself (a hidden state, a running
total). Not reported: two backward passes through one graph in the same
iteration (`loss1.backward(retain_graph=True); loss2.backward()`, also when
a helper runs either backward: a helper handed a loss is silent wherever one
of its calls is followed, preceded or repeated by another backward in the
iteration), loops over several losses, task heads or Jacobian rows that
differentiate a graph built before the loop, loops that neither step an optimizer nor link iterations,
and higher-order gradients with `create_graph=True`.

## Example
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward(retain_graph=True)
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Fix safety
The fix removes the `retain_graph=True` argument. It is offered only when
nothing carries a graph tensor from one iteration into the next (a running
total, a recurrent state as TL303 finds it): there, the retained graph is
what the next backward goes through, and the real fix is to `detach()` the
carried state. It is unsafe because torchlint
cannot see every backward: one in another module, or state carried through
an attribute such as `self.hidden`, may still go through this graph, and
that backward then raises "Trying to backward through the graph a second
time".
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for call in file_model.calls:
            loop = call.site.loop
            if not file_model.is_differentiation(call):
                continue
            if literal_bool(keyword(call.node, "retain_graph")) is not True:
                continue
            if literal_bool(keyword(call.node, "create_graph")) is True:
                continue
            if loop is None:
                if _called_in_a_training_loop(file_model, call):
                    yield self.report(call.node, _CALLED_MESSAGE)
                continue
            if _later_backward(file_model, call, loop):
                continue
            shared, carried = graph_origin(call, loop)
            if shared:
                continue
            if not carried and not file_model.loop_role(loop).steps:
                continue  # nothing links iterations and no step changes the weights
            yield self.report(call.node, fix=None if carried else _drop_retain_graph(file_model, call.node, loop))
        yield from self._retaining_helpers(file_model)

    def _retaining_helpers(self, file_model: FileModel) -> Iterator[Finding]:
        """A loop here calls a function of another project module whose last backward retains
        its graph: the same leak, reported at the call (the fix is in that module)."""
        for call in file_model.calls:
            loop = call.site.loop
            does = retains_graph(file_model, call) if loop is not None else None
            if loop is None or does is None or _later_backward(file_model, call, loop) or _later_project_gradients(
                    file_model, call, loop):
                continue
            if does.retained_params:  # the graph of what the call hands it (``step(loss, opt)``)
                handed = [argument(call, does.params, p) for p in sorted(does.retained_params)]
                if any(value is None for value in handed) or _other_gradients(file_model, call):
                    continue
                roots = _tensor_roots_of(file_model, handed)
                if not _bound_in(roots, loop):
                    continue
            else:
                roots = _tensor_roots(file_model, call)
            shared, carried = _origin_of(roots, loop)
            if shared or not (carried or does.steps or file_model.loop_role(loop).steps):
                continue
            yield self.report(call.node, _HELPER_MESSAGE.format(call.callee))

    valid = (
        """\
import torch


def train(encoder, head_a, head_b, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        features = encoder(x)
        loss_a = head_a(features, y)
        loss_b = head_b(features, y)
        loss_a.backward(retain_graph=True)
        loss_b.backward()
        optimizer.step()
""",
        """\
import torch


def train(critic, loader, optimizer):
    for real in loader:
        optimizer.zero_grad()
        real.requires_grad_(True)
        score = critic(real).mean()
        (grad,) = torch.autograd.grad(score, real, create_graph=True, retain_graph=True)
        loss = -score + 10 * (grad.norm(2, dim=1) - 1).pow(2).mean()
        loss.backward()
        optimizer.step()
""",
        """\
import torch


def auxiliary(model, x):
    out = model(x)
    out.pow(2).mean().backward(retain_graph=True)
    return out


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        out = auxiliary(model, x)
        criterion(out, y).backward()
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward(retain_graph=True)  # expect: TL302
        optimizer.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        grads = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)  # expect: TL302
        for p, g in zip(model.parameters(), grads):
            p.grad = g
        optimizer.step()
""",
        """\
import torch


def train_step(model, optimizer, criterion, x, y):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward(retain_graph=True)  # expect: TL302
    optimizer.step()
    return loss.item()


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        train_step(model, optimizer, criterion, x, y)
""",
    )
