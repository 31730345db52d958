"""Which code a call runs, who calls a function, what runs more than once.

The calls of the file to its own functions and methods, read by name: ``helper(x)`` runs
the nearest ``def helper`` around it, ``self.step()`` the method of the class it stands in,
``agent.act(s)`` the method of the class every binding of ``agent`` builds. From these: a
function's callers, the code a loop or function reaches (its span and the helpers it calls,
at any depth), whether a call repeats, and the role of a loop (does it backpropagate, step,
clear gradients, iterate over data?).
"""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model import vocab
from torchlint.model.expr import dotted, identifiers
from torchlint.model.grad import GradMode, classify
from torchlint.model.records import LoopRole
from torchlint.model.tree import COMPREHENSIONS, ancestors

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Loop, Scope, Span


def resolve(file_model: FileModel, call: CallSite) -> Optional[Scope]:
    """The function or method of this module a call runs, if we can tell (``FileModel.resolve``
    keeps the answer)."""
    callee = call.callee
    if callee is None:
        return None
    head, _, rest = callee.partition(".")
    if not rest:
        return _function_named(file_model, head, call.scope)
    if head in ("self", "cls") and "." not in rest:
        cls = file_model.enclosing_class(call.scope)
        return file_model.methods.get((cls, rest)) if cls else None
    return None


def _function_named(file_model: FileModel, name: str, where: Scope) -> Optional[Scope]:
    """The function ``name`` means in ``where``: the nearest enclosing scope's own."""
    candidates = file_model.functions.get(name)
    if not candidates:
        return None
    scope: Optional[Scope] = where
    while scope is not None:
        for cand in candidates:
            if cand.parent is scope:
                return cand
        scope = scope.parent
    return None


def wrapped_calls(file_model: FileModel) -> Dict[Scope, List[GradMode]]:
    """{function: [grad mode, ...]} for calls made through a grad-mode wrapper:
    ``torch.no_grad()(evaluate)(model, loader)`` runs ``evaluate`` without grad."""
    out: Dict[Scope, List[GradMode]] = defaultdict(list)
    for call in file_model.calls:
        wrapper = call.node.func
        if type(wrapper) is not cst.Call or len(wrapper.args) != 1 or type(wrapper.func) is not cst.Call:
            continue
        mode = classify(wrapper.func)
        name = dotted(wrapper.args[0].value)
        target = _function_named(file_model, name, call.scope) if mode is not None and name is not None else None
        if target is not None and mode is not None:
            out[target].append(mode)
    return out


def instance_methods(file_model: FileModel, call: CallSite) -> Tuple[Scope, ...]:
    """The methods of classes of this module that ``agent.act(s)`` may run, when every
    binding of ``agent`` builds one of them (each class's own method, or one it inherits
    from the file); empty when a binding is something else or a class lacks the method."""
    receiver, method = call.receiver, call.method
    if receiver is None or method is None or receiver in ("self", "cls"):
        return ()
    found = []
    for cls in sorted(file_model.roles.instance_classes(receiver)):
        scope = _own_or_inherited(file_model, cls, method)
        if scope is None:
            return ()
        found.append(scope)
    return tuple(found)


def _own_or_inherited(file_model: FileModel, cls: str, method: str) -> Optional[Scope]:
    seen = set()
    current: Optional[str] = cls
    while current is not None and current not in seen:
        seen.add(current)
        found = file_model.methods.get((current, method))
        if found is not None:
            return found
        current = next((b for b in file_model.class_bases.get(current, ()) if b in file_model.class_bases), None)
    return None


def callers(file_model: FileModel) -> Dict[Scope, List[CallSite]]:
    """{function or method of the file: the calls of the file that run it (``resolve``)}."""
    out: Dict[Scope, List[CallSite]] = defaultdict(list)
    for call in file_model.calls:
        target = file_model.resolve(call)
        if target is not None:
            out[target].append(call)
    return out


def part_of_forward(file_model: FileModel, scope: Scope) -> bool:
    """``forward``/``_forward``/``__call__``, or a function one of them calls (here, at
    any depth): its results may be backpropagated by whoever ran the forward."""
    seen: Set[Scope] = set()
    todo = [scope]
    while todo:
        current = todo.pop()
        if current.name in vocab.FORWARD_METHODS and not current.is_module:
            return True
        if current in seen:
            continue
        seen.add(current)
        todo.extend(call.scope for call in file_model.callers.get(current, ()))
        if current.class_name is not None:
            # self.helper() in a base or sibling class reaches it through inheritance.
            todo.extend(c.scope for c in file_model.derived(_calls_by_callee).get(f"self.{current.name}", ()))
    return False


def _calls_by_method(file_model: FileModel) -> Dict[str, List[CallSite]]:
    out: Dict[str, List[CallSite]] = defaultdict(list)
    for call in file_model.calls:
        if call.method:
            out[call.method].append(call)
    return out


def _calls_by_callee(file_model: FileModel) -> Dict[Optional[str], List[CallSite]]:
    out: Dict[Optional[str], List[CallSite]] = defaultdict(list)
    for call in file_model.calls:
        out[call.callee].append(call)
    return out


def reachable_ranges(file_model: FileModel, span: Union[Scope, Span, Loop]) -> List[Tuple[int, int]]:
    """``span`` (a Loop or Scope) plus the same-module helpers it calls, as order ranges."""
    ranges, seen, todo = [], set(), [(span.start, span.end)]
    while todo:
        start, end = todo.pop()
        ranges.append((start, end))
        for call in file_model.calls_between(start, end):
            target = file_model.resolve(call)
            if target is not None and target not in seen and not start <= target.start < end:
                seen.add(target)
                todo.append((target.start, target.end))
    return ranges


def reachable_calls(file_model: FileModel, span: Union[Scope, Span, Loop]) -> list:
    return [c for start, end in reachable_ranges(file_model, span) for c in file_model.calls_between(start, end)]


def reachable_assignments(file_model: FileModel, span: Union[Scope, Span, Loop]) -> list:
    out = []
    for start, end in reachable_ranges(file_model, span):
        out.extend(file_model.assignments_between(start, end))
    return out


def loop_role(file_model: FileModel, loop: Loop) -> LoopRole:
    calls = reachable_calls(file_model, loop)
    return LoopRole(
        calls=calls,
        backward=any(file_model.is_backward(c) for c in calls),
        steps=[c for c in calls if file_model.stepped_optimizer(c)],
        clears=any(file_model.clears_grad(c) for c in calls) or any(
            file_model.clears_grad_by_assignment(a) for a in reachable_assignments(file_model, loop)
        ),
        data=loop.iter is not None and any(vocab.is_loader_name(n) for n in identifiers(loop.iter)),
    )


def loop_children(file_model: FileModel, loop: Loop) -> list:
    return [other for other in loop.scope.loops if other.parent is loop]


def repeats(file_model: FileModel, call: CallSite) -> bool:
    """Does the call run more than once: in a loop or a comprehension, or in a function
    that a same-module caller reaches from one? (Callers elsewhere are not known.)"""
    here = call.site.loop is not None or _in_comprehension(file_model, call)
    return file_model.derived(_repeats, call.scope, here, while_computing=False)


def _repeats(file_model: FileModel, scope: Scope, here: bool) -> bool:
    if here:
        return True
    calls = list(file_model.callers.get(scope, ()))
    if scope.class_name is not None:  # ``agent.choose_action(s)``: a method, by its name
        calls += [c for c in file_model.derived(_calls_by_method).get(scope.name, ()) if c.receiver is not None]
    # A recursive call asking about its own scope hears "no" until the answer is known.
    return any(file_model.derived(_repeats, c.scope, c.site.loop is not None or _in_comprehension(file_model, c),
                                  while_computing=False) for c in calls)


def _in_comprehension(file_model: FileModel, call: CallSite) -> bool:
    """Is the call inside a comprehension of its statement (``[model(x) for x in xs]``)?
    Climbed from the call to the statement, not searched down from it."""
    between = ancestors(call.site.stmt, call.node, file_model.parents)
    return between is not None and any(isinstance(node, COMPREHENSIONS) for node in between)
