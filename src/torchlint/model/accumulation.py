"""Gradient accumulation: a backward every micro-batch, an optimizer step every k of them.

Two shapes of training loop accumulate on purpose:

* the step guarded by a counter (``if (i + 1) % accum_steps == 0: opt.step();
  opt.zero_grad()``, or ``if count == k:``), the backward outside the guard in
  the same loop, and gradients cleared only in the guard;
* an inner loop of micro-batches (``for micro in range(k): ... loss.backward()``)
  followed by one step, with no step or clearing inside it.

In both, each micro-batch's loss comes from a forward pass run inside the
micro-batch loop, so the sum is over micro-batches of one objective, not over
parts of one loss (two losses through one graph) nor over an episode's time
steps. What ``accumulations`` finds is the shape; whether the gradients are
averaged (``loss / k``, a rescaling of ``.grad`` before the step, an engine's
own ``backward``) or summed on purpose (``reduction="sum"``) is
``scaled_on_the_way``'s question.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from torchlint.model.constructions import constructions, one_torch_class
from torchlint.model import vocab
from torchlint.model.expr import dotted, identifiers, keyword, literal_bool, positional, referenced_paths
from torchlint.model.steps import forward_sources
from torchlint.model.vocab import last_name, tokens

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Loop, Scope

# Statements that run their body only sometimes, between a call and the loop around it.
_CONDITIONAL = (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler,
                cst.ExceptStarHandler, cst.Finally, cst.Match, cst.MatchCase)
# Methods and torch functions that scale a loss (``loss.div(k)``, ``torch.mul(loss, 1 / k)``).
_SCALING_AUG = frozenset(("DivideAssign", "MultiplyAssign", "FloorDivideAssign"))
_SCALING_METHODS = frozenset("div div_ mul mul_ true_divide multiply divide".split())
# Calls whose value is a sum of their operands' losses: ``sum(losses)``, ``torch.stack(ls).mean()``.
_SUMMING = frozenset("sum mean stack cat add".split())
# Words that, with ``grad`` in a call's name, rescale gradients before the step
# (``multiply_grads``, ``scale_grads``, ``average_gradients``).
_RESCALE_WORDS = frozenset("div divide mul multiply scale average normalize".split())


@dataclass(frozen=True)
class Accumulation:
    """One backward that runs every micro-batch, and the step that runs every ``every`` of them."""

    backward: CallSite
    step: CallSite
    micro_loop: Loop  # its iterations are the micro-batches
    every: Optional[cst.BaseExpression]  # k as written (``accum_steps``), when the code says it
    guard: Optional[cst.If]  # the ``if`` that runs the step every k iterations (the counter form)


def accumulations(file_model: FileModel) -> Tuple[Accumulation, ...]:
    """Every accumulating backward of the file (see the module's docstring)."""
    return file_model.derived(_accumulations)


def _accumulations(file_model: FileModel) -> Tuple[Accumulation, ...]:
    found: List[Accumulation] = []
    for scope in file_model.scopes:
        steps = [c for c in scope.calls if file_model.stepped_optimizer(c) is not None]
        backwards = file_model.backwards_in(scope)
        if not steps or not backwards:
            continue
        for step in steps:
            found.extend(_guarded(file_model, scope, step, backwards))
            found.extend(_micro_batch_loop(file_model, scope, step, backwards))
    return tuple(found)


# -- the counter form ----------------------------------------------------------------
def _guarded(file_model: FileModel, scope: Scope, step: CallSite, backwards: Sequence[CallSite]) -> Iterator[Accumulation]:
    loop = step.site.loop
    if loop is None:
        return
    guard, every = _every_k_guard(file_model, scope, step, loop)
    if guard is None:
        return
    if _cleared_outside(file_model, scope, loop, guard):
        return  # gradients cleared every iteration: nothing adds up
    for backward in backwards:
        if backward.site.loop is not loop or _inside(file_model, backward.site.stmt, guard):
            continue
        if _runs_every_iteration(file_model, backward, loop) and _loss_computed_in(file_model, backward, loop):
            yield Accumulation(backward, step, loop, every, guard)


def _every_k_guard(file_model: FileModel, scope: Scope, step: CallSite,
                   loop: Loop) -> Tuple[Optional[cst.If], Optional[cst.BaseExpression]]:
    """The innermost ``if`` around ``step`` (inside ``loop``) whose test holds every k-th iteration,
    and k."""
    current = file_model.parents.get(id(step.site.stmt))
    while current is not None and current is not loop.node:
        if isinstance(current, cst.If):
            every = _period(file_model, scope, current.test, loop)
            if every is not None:
                return current, every
        current = file_model.parents.get(id(current))
    return None, None


def _period(file_model: FileModel, scope: Scope, test: cst.BaseExpression, loop: Loop) -> Optional[cst.BaseExpression]:
    """k of a test that holds once every k iterations of ``loop``: ``(i + 1) % k == 0``,
    ``not step % k``, ``count == k`` / ``count >= k`` for a counter the loop increments; either
    side of ``or`` (a flush at the last batch) and ``and``."""
    if isinstance(test, cst.BooleanOperation):
        return _period(file_model, scope, test.left, loop) or _period(file_model, scope, test.right, loop)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _modulus(test.expression, scope, loop)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    left, target = test.left, test.comparisons[0]
    right = target.comparator
    if isinstance(target.operator, cst.Equal):  # ``(i + 1) % k == 0``, ``i % k == k - 1``
        k = _modulus(left, scope, loop) or _modulus(right, scope, loop)
        if k is not None:
            return k
    if isinstance(target.operator, (cst.Equal, cst.GreaterThanEqual)):
        counter = dotted(left)
        if counter is not None and _incremented_in(scope, loop, counter):
            return right
    return None


def _modulus(expr: cst.BaseExpression, scope: Scope, loop: Loop) -> Optional[cst.BaseExpression]:
    """``k`` of ``n % k`` where ``n`` changes every iteration of ``loop`` (its target, or a counter)."""
    if not isinstance(expr, cst.BinaryOperation) or not isinstance(expr.operator, cst.Modulo):
        return None
    varying = set(referenced_paths(expr.left))
    node = loop.node
    per_iteration = set(referenced_paths(node.target)) if isinstance(node, cst.For) else set()
    if varying & per_iteration or any(_incremented_in(scope, loop, p) for p in varying):
        return expr.right
    return None


def _incremented_in(scope: Scope, loop: Loop, path: str) -> bool:
    """Does ``loop`` add to ``path`` every iteration (``step += 1``, ``count = count + 1``)?"""
    for a in scope.assignments:
        if not loop.contains(a.order) or not any(dotted(t) == path for t in a.targets):
            continue
        if a.kind == "aug" and a.op == "AddAssign":
            return True
        value = a.value
        if a.kind == "assign" and isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            if dotted(value.left) == path or dotted(value.right) == path:
                return True
    return False


def _inside(file_model: FileModel, stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
    """Is the statement ``stmt`` somewhere under ``node``?"""
    current = file_model.parents.get(id(stmt))
    while current is not None:
        if current is node:
            return True
        current = file_model.parents.get(id(current))
    return False


def _runs_every_iteration(file_model: FileModel, call: CallSite, loop: Loop) -> bool:
    """Is the call's statement in the loop's body outside any branch (``with`` blocks are fine)?"""
    current = file_model.parents.get(id(call.site.stmt))
    while current is not None and current is not loop.node:
        if isinstance(current, _CONDITIONAL):
            return False
        current = file_model.parents.get(id(current))
    return current is loop.node


def _cleared_outside(file_model: FileModel, scope: Scope, loop: Loop, guard: cst.If) -> bool:
    """Are gradients cleared in ``loop`` outside the guard (directly or by a helper it calls)?"""
    for call in file_model.calls_in(loop):
        if call.scope is not scope or _inside(file_model, call.site.stmt, guard):
            continue
        if file_model.clears_grad(call):
            return True
        helper = file_model.resolve(call)
        if helper is not None and any(file_model.clears_grad(c) for c in file_model.reachable_calls(helper)):
            return True
    return any(loop.contains(a.order) and file_model.clears_grad_by_assignment(a) and not _inside(
        file_model, a.site.stmt, guard) for a in scope.assignments)


def _loss_computed_in(file_model: FileModel, backward: CallSite, loop: Loop) -> bool:
    """Does the backpropagated loss come from a forward pass run in this iteration of ``loop``?"""
    loss = backpropagated(file_model, backward)
    if loss is None:
        return False
    return any(loop.contains(s.order) for s in forward_sources(file_model, backward.scope, loss, backward.order))


# -- the inner-loop form -------------------------------------------------------------
def _micro_batch_loop(file_model: FileModel, scope: Scope, step: CallSite,
                      backwards: Sequence[CallSite]) -> Iterator[Accumulation]:
    """``for _ in range(k): ...; loss.backward()`` right before ``opt.step()``, in the same block."""
    outer = step.site.loop
    before = [m for m in scope.loops if m.parent is outer and m.end <= step.order
              and any(b.site.loop is m for b in backwards)]
    if not before:
        return
    micro = max(before, key=lambda m: m.start)  # the nearest loop before the step that backpropagates
    if any(step.order > c.order >= micro.end and file_model.clears_grad(c) for c in scope.calls):
        return  # cleared between the micro-batches and the step: nothing accumulated reaches it
    inner = file_model.reachable_calls(micro)
    if any(file_model.stepped_optimizer(c) or file_model.clears_grad(c) for c in inner):
        return
    if not _draws_micro_batches(file_model, micro):
        return
    for backward in backwards:
        if backward.site.loop is micro and _runs_every_iteration(file_model, backward, micro) \
                and _loss_computed_in(file_model, backward, micro):
            yield Accumulation(backward, step, micro, _range_count(micro), None)


def _range_count(loop: Loop) -> Optional[cst.BaseExpression]:
    """``k`` of ``for _ in range(k)``."""
    it = loop.iter
    if isinstance(it, cst.Call) and dotted(it.func) == "range" and len(it.args) == 1 and not it.args[0].star:
        return it.args[0].value
    return None


def _draws_micro_batches(file_model: FileModel, loop: Loop) -> bool:
    """Does each iteration of ``loop`` take a new batch: ``for _ in range(k)`` (the batch fetched in
    the body), or a loop over a loader? Not a loop over the parts of one batch or one sequence
    (``zip(x.split(t, 1), ...)``: truncated backpropagation through time sums on purpose), nor
    over losses or heads."""
    if _range_count(loop) is not None:
        return True
    return loop.iter is not None and any(vocab.is_loader_name(n) for n in identifiers(loop.iter))


# -- is the sum averaged? --------------------------------------------------------------
def backpropagated(file_model: FileModel, backward: CallSite) -> Optional[cst.BaseExpression]:
    """The loss a backward call differentiates, as written: ``loss`` of ``loss.backward()``,
    of ``scaler.scale(loss).backward()`` and of ``torch.autograd.backward(loss)``. None for
    an engine's ``backward(loss)`` (accelerate, DeepSpeed, Lightning's ``manual_backward``),
    which may scale the loss itself."""
    node = backward.node
    func = node.func
    if backward.method == "backward" and isinstance(func, cst.Attribute) and file_model.qualify(backward) is None:
        if positional(node, 0) is not None:
            return None  # ``accelerator.backward(loss)``, ``engine.backward(loss)``
        loss: cst.BaseExpression = func.value
    elif file_model.qualify(backward) == "torch.autograd.backward":
        first = positional(node, 0) or keyword(node, "tensors")
        if first is None:
            return None
        loss = first
    else:
        return None
    if isinstance(loss, cst.Call) and isinstance(loss.func, cst.Attribute) and loss.func.attr.value == "scale":
        inner = positional(loss, 0)  # ``scaler.scale(loss)``: the loss scale is undone before the step
        return inner
    return loss


def scaled_on_the_way(file_model: FileModel, acc: Accumulation) -> bool:
    """Is the accumulated sum averaged or meant? The loss is divided or multiplied on its way to
    the backward (``loss / k``, ``loss = loss / k``, ``loss /= k``, ``torch.div``), gradients are
    rescaled before the step (``p.grad.div_(k)``, ``multiply_grads``), the loss sums on purpose
    (``reduction="sum"``), or an engine backpropagates it."""
    loss = backpropagated(file_model, acc.backward)
    if loss is None:
        return True
    scope = acc.backward.scope
    if _Scaling(file_model, scope, acc.backward.order).of(loss, 0):
        return True
    return _grads_rescaled(file_model, scope, acc)


def _is_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


class _Scaling:
    """Walks a loss expression at the loss's own level (not into the arguments of the calls
    that compute it: ``criterion(model(x / 255), y)`` scales an input, not the loss)."""

    def __init__(self, file_model: FileModel, scope: Scope, order: int) -> None:
        self.file_model = file_model
        self.scope = scope
        self.order = order
        self.seen: Set[str] = set()

    def of(self, expr: Optional[cst.BaseExpression], depth: int, in_sum: bool = False) -> bool:
        """Does ``expr`` scale the loss? A division anywhere does; a product by a number only
        outside a sum (``0.5 * loss``, not ``loss + 0.01 * penalty``: that weighs a term)."""
        if expr is None or depth > 12:
            return False
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type; mypy cannot follow that
        if t is cst.BinaryOperation:
            if isinstance(e.operator, (cst.Add, cst.Subtract)):
                return self.of(e.left, depth + 1, True) or self.of(e.right, depth + 1, True)
            if isinstance(e.operator, (cst.Divide, cst.FloorDivide)):
                return True
            if isinstance(e.operator, cst.Multiply):
                weight = _is_number(e.left) or _is_number(e.right)
                if not (weight and in_sum):
                    return True
            return self.of(e.left, depth + 1, in_sum) or self.of(e.right, depth + 1, in_sum)
        if t is cst.UnaryOperation:
            return self.of(e.expression, depth + 1, in_sum)
        if t in (cst.Name, cst.Attribute):
            path = dotted(e)
            return path is not None and self._name(path, depth)
        if t is cst.Subscript:
            return self.of(e.value, depth + 1)
        if t is cst.Call:
            return self._call(e, depth)
        if t in (cst.Tuple, cst.List):
            return any(self.of(el.value, depth + 1) for el in e.elements)
        return False

    def _name(self, path: str, depth: int) -> bool:
        if path in self.seen:
            return False
        self.seen.add(path)
        for a in self.scope.assignments:
            if a.order >= self.order or not any(dotted(t) == path for t in a.targets):
                continue
            if a.kind == "aug" and a.op in _SCALING_AUG:
                return True  # ``loss /= k``
            if a.kind in ("assign", "aug") and self.of(a.value, depth + 1):
                return True
        return False

    def _call(self, call: cst.Call, depth: int) -> bool:
        file_model = self.file_model
        func = call.func
        qualified = file_model.names.qualify(dotted(func)) or ""
        name = last_name(qualified) if qualified else (func.attr.value if isinstance(func, cst.Attribute) else
                                                        dotted(func) or "")
        if name in _SCALING_METHODS:
            return True
        if _sums_on_purpose(file_model, self.scope, call, self.order):
            return True
        if isinstance(func, cst.Attribute) and not qualified:
            if name in _SUMMING or name in ("squeeze", "view", "reshape", "float"):
                return self.of(func.value, depth + 1)  # ``loss.mean()``, ``torch.stack(ls).sum()``
            return False
        if name in _SUMMING:  # ``sum(losses)``, ``torch.stack(losses)``, ``torch.add(a, b)``
            return any(self.of(arg.value, depth + 1) for arg in call.args)
        return False


def _sums_on_purpose(file_model: FileModel, scope: Scope, call: cst.Call, order: int) -> bool:
    """A loss that sums over its batch (``reduction="sum"``, ``size_average=False``), given to the
    call or to the criterion's construction: summing micro-batches too is then consistent."""
    for node in (call, *_criterion_constructions(file_model, scope, call, order)):
        reduction = keyword(node, "reduction")
        if isinstance(reduction, cst.SimpleString) and reduction.evaluated_value == "sum":
            return True
        if literal_bool(keyword(node, "size_average")) is False:
            return True
    return False


def _criterion_constructions(file_model: FileModel, scope: Scope, call: cst.Call, order: int) -> List[cst.Call]:
    callee = dotted(call.func)
    if callee is None or file_model.names.qualify(callee) is not None:
        return []
    found = constructions(file_model, scope, callee, order)
    return [b.call for b in found or ()]


def _grads_rescaled(file_model: FileModel, scope: Scope, acc: Accumulation) -> bool:
    """Are gradients divided or multiplied where they accumulate, or on the way to the step?"""
    def between(order: int) -> bool:
        return acc.micro_loop.contains(order) or (acc.guard is None and acc.micro_loop.end <= order < acc.step.order)

    for call in scope.calls:
        if not between(call.order):
            continue
        receiver = call.receiver or ""
        if call.method in ("div_", "mul_") and receiver.endswith((".grad", ".grad.data")):
            return True
        words = set(tokens(call.method or ""))
        if words & {"grad", "grads", "gradients"} and words & _RESCALE_WORDS:
            return True
    for a in scope.assignments:
        if between(a.order) and a.kind == "aug" and a.op in _SCALING_AUG:
            if any((dotted(t) or "").endswith(".grad") for t in a.targets):
                return True
    return False


# -- which optimizers a k-fold gradient changes ------------------------------------------
def stepped_class(file_model: FileModel, step: CallSite) -> Optional[str]:
    """The torch optimizer class the stepped optimizer was built as (``torch.optim.SGD``), when the
    file shows its construction."""
    optimizer = file_model.stepped_optimizer(step)
    if optimizer is None:
        return None
    return one_torch_class(file_model, constructions(file_model, step.scope, optimizer, step.order))
