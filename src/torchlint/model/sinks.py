"""Meters: objects whose methods sum their argument into ``self``.

``AverageMeter.update(val, n)`` doing ``self.sum += val * n`` keeps every
value it is given alive through ``self.sum``; handed a loss tensor, it
chains every iteration's graph together. Only classes defined in the file
are read: an imported meter may call ``.item()`` itself (torchmetrics runs
its updates under ``no_grad``), and we cannot see which.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, List, Optional, Union

import libcst as cst

from torchlint.model.carry import Flow
from torchlint.model.expr import bound_values, dotted, positional, referenced_paths
from torchlint.model.records import CallSite
from torchlint.model.vocab import CONTAINER_METHODS

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Scope
    from torchlint.model import FileModel

_ADDITIVE = frozenset(("AddAssign", "SubtractAssign", "MultiplyAssign"))


def _fills_own_container(call: CallSite) -> bool:
    """``self.values.append(x)``, whatever ``x`` is."""
    return call.method in CONTAINER_METHODS and (call.receiver or "").startswith("self.")


def _sum_into_self(a: Assignment) -> bool:
    """``self.sum += x`` or ``self.total = self.total + x``, whatever ``x`` is."""
    target = dotted(a.targets[0]) if a.targets else None
    if target is None or not target.startswith("self."):
        return False
    if a.kind == "aug":
        return a.op in _ADDITIVE
    return a.kind == "assign" and isinstance(a.value, cst.BinaryOperation) and target in set(
        referenced_paths(a.value)
    )


class Meters:
    """Which classes of this file accumulate which method arguments, and which names hold them."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.flow = Flow(file_model)

    @cached_property
    def accumulating(self) -> dict:
        """{(class, method): ((index, parameter), ...)} for arguments a method sums into ``self``."""
        out = {}
        for (cls, name), scope in self.file_model.methods.items():
            if not self._may_accumulate(scope):
                continue  # no parameter can: most methods, and the replay per parameter is not cheap
            params = scope.params[1:]  # after self
            kept = tuple((i, p) for i, p in enumerate(params) if self._accumulates(scope, p))
            if kept:
                out[(cls, name)] = kept
        return out

    @staticmethod
    def _may_accumulate(scope: Scope) -> bool:
        """Has ``scope`` a statement of the shapes ``_accumulates`` looks for, whatever flows
        into it: a container method called on ``self.x``, or a sum into ``self.x``."""
        return any(map(_fills_own_container, scope.calls)) or any(map(_sum_into_self, scope.assignments))

    def _accumulates(self, scope: Scope, param: str) -> bool:
        """Does ``param`` (or a value computed from it) end up summed or appended into ``self``?"""
        derived = {param: 1}
        events: List[Union[Assignment, CallSite]] = list(scope.assignments)
        events += [c for c in scope.calls if _fills_own_container(c)]
        for event in sorted(events, key=lambda e: e.order):
            if isinstance(event, CallSite):  # self.values.append(val)
                if any(self.flow.level(arg.value, derived) for arg in event.node.args):
                    return True
                continue
            if self._sums_into_self(event, derived):
                return True
            self.flow.step(event, derived)
        return False

    def _sums_into_self(self, a: Assignment, derived: dict) -> bool:
        """``self.sum += val * n`` or ``self.total = self.total + val``, of a value derived
        from the parameter."""
        return _sum_into_self(a) and bool(self.flow.level(a.value, derived))

    @cached_property
    def instances(self) -> dict:
        """{path: class} for names bound to an instance of an accumulating class."""
        classes = {cls for cls, _ in self.accumulating}
        classes |= {cls for cls, bases in self.file_model.class_bases.items() if classes.intersection(bases)}
        found, other = {}, set()
        for a in self.file_model.assignments:
            if a.kind != "assign":
                continue
            for target in a.targets:  # ``loc_meter, conf_meter = AverageMeter(), AverageMeter()`` too
                for path, value in bound_values(target, a.value):
                    if not isinstance(value, cst.Call):
                        continue
                    cls = dotted(value.func)
                    if cls in classes:
                        found[path] = cls
                    else:
                        other.add(path)
        return {path: cls for path, cls in found.items() if path not in other}

    def kept_arguments(self, call: CallSite) -> list:
        """The argument expressions of ``meter.update(...)`` that the meter keeps."""
        cls = self.instances.get(call.receiver or "")
        if cls is None:
            return []
        return self.arguments_kept_by(cls, call)

    def arguments_kept_by(self, cls: str, call: CallSite) -> list:
        """The argument expressions of a call of ``cls``'s method that the method keeps
        (``self.track(loss)`` inside ``cls``)."""
        params = self.accumulating.get((cls, call.method)) or self._inherited(cls, call.method)
        out = []
        for index, name in params:
            arg = _argument(call.node, index, name)
            if arg is not None:
                out.append(arg)
        return out

    def _inherited(self, cls: str, method: Optional[str]) -> tuple:
        for base in self.file_model.class_bases.get(cls, ()):
            if (base, method) in self.accumulating:
                return self.accumulating[(base, method)]
        return ()


def _argument(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return positional(call, index)
