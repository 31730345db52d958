"""What a backward consumes: the names whose graph a ``backward()`` or ``autograd.grad`` needs.

A value kept across iterations is no leak when a later backward sums it:
gradient accumulation (``total += loss`` ... ``total.backward()``), an RL
episode's log-probabilities summed once per episode. The backward may sit
in the same function or in a same-module helper the function hands the
accumulator to (REINFORCE's ``finish_episode``); both count.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Set

from torchlint.model import differentiated, flow_back
from torchlint.model.expr import bound_paths, dotted, read_paths

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.model.records import CallSite, Scope
    from torchlint.model import FileModel


def consumed_by_backward(file_model: FileModel, scope: Scope) -> frozenset:
    """Paths of ``scope`` whose graph a backward in it (or in a helper it calls) consumes:
    ``total`` of ``total.backward()``, and what flows into it."""
    # A call cycle hears "nothing" from itself until the answer is known.
    return file_model.derived(_consumed, scope, while_computing=frozenset())


def _consumed(file_model: FileModel, scope: Scope) -> frozenset:
    paths: Set[str] = set()
    for call in scope.calls:
        if file_model.is_differentiation(call):
            paths.update(read_paths(call.node))
            source = differentiated(call)
            if source is not None:
                paths.update(read_paths(source))
            continue
        helper = file_model.resolve(call)
        if helper is not None and helper is not scope:
            paths.update(_handed_over(file_model, call, helper))
    return frozenset(flow_back(paths, scope))


def _handed_over(file_model: FileModel, call: CallSite, helper: Scope) -> set:
    """The caller's paths behind what ``helper`` backpropagates: its parameters mapped
    to the arguments of ``call``, ``self.`` state for a method of the same object, and
    module-level names both share."""
    inner = consumed_by_backward(file_model, helper)
    if not inner:
        return set()
    arguments = _arguments(call, helper)
    shared = _module_names(file_model)
    out = set()
    for path in inner:
        root, _, rest = path.partition(".")
        if root in ("self", "cls") and root in helper.params[:1]:
            if (call.callee or "").startswith(root + "."):
                out.add(path)
        elif root in arguments:
            expr = arguments[root]
            base = dotted(expr)
            if base is not None:
                out.add(f"{base}.{rest}" if rest else base)
            else:
                out.update(read_paths(expr))  # update(total / k, opt): ``total``
        elif root not in helper.params and root in shared:
            out.add(path)
    return out


def _arguments(call: CallSite, helper: Scope) -> Dict[str, cst.BaseExpression]:
    """{parameter: argument expression} for a call of a same-module function or method."""
    method = helper.class_name is not None and (call.callee or "").startswith(("self.", "cls."))
    params = helper.params[1:] if method else helper.params
    out: Dict[str, cst.BaseExpression] = {}
    for index, arg in enumerate(call.node.args):
        if arg.star:
            break  # *args: positions no longer line up
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif index < len(params):
            out[params[index]] = arg.value
    return out


def _module_names(file_model: FileModel) -> frozenset:
    return file_model.derived(_bound_at_module_level)


def _bound_at_module_level(file_model: FileModel) -> frozenset:
    scope = file_model.module_scope
    return frozenset(p for a in scope.assignments for t in a.targets for p in bound_paths(t))
