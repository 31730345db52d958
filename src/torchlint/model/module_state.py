"""Module state that a forward pass adds graphs to, one per call.

A criterion (or any module) whose ``forward`` does ``self.losses["cls"] += loss_cls``,
``self.total = self.total + loss`` or ``self.history.append(loss)`` adds the graph of
every call to an attribute that lives as long as the module. The training loop calls it
once per step, so every step's graph stays reachable: the leak of ``total_loss += loss``
in the loop (TL301), hidden in the criterion where the loop cannot show it. A helper
the forward hands the loss to (``self._track(loss)``, ``self.meter.update(loss)``) that
sums or appends its argument into its own ``self`` keeps it the same way.

Not kept:

* values cut from the graph (``.item()``, ``.detach()``, ``float()``, ``.data``):
  taint's reading;
* sums computed with grad disabled: a buffer updated under ``no_grad`` records no graph
  (an ``append`` there still keeps the tensor it is given, graph and all);
* what replaces instead of adding: ``self.last_loss = loss`` and ``self.losses[name] = loss``
  keep one call's graph at most, which the caller backpropagates anyway;
* a module that is no criterion keeping what is not named as a loss: inputs or outputs
  logged for inspection (``self.call_args.append(x)``, ``self.log_scalings.append(s)``);
* an attribute the call itself resets (``self.losses = {}`` at the top of ``forward``, an
  entry set back to ``0.0``, ``.clear()`` at its end): it only ever holds this call's graph.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, identifiers
from torchlint.model.grad import GradMode
from torchlint.model.sinks import Meters
from torchlint.model.stores import Store, self_sum, stores
from torchlint.model.vocab import is_loss_name, last_name

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Scope

# Bases of criteria that the model's class facts (``roles.model_classes``) do not name.
LOSS_BASES = frozenset(("_Loss", "_WeightedLoss"))  # criteria by class
# Calls that empty a container or a meter.
_RESETS = frozenset(("clear", "reset", "reset_states", "zero_"))


@dataclass(frozen=True)
class KeptInState:
    """A graph-carrying ``value`` that one forward call adds to what ``self`` keeps."""

    node: cst.CSTNode  # the store, or the call that hands the value to a helper that stores it
    container: str  # ``self.losses``, or ``self.meter`` for a meter's update
    value: cst.BaseExpression


def graph_kept_in_module_state(file_model: FileModel) -> Tuple[KeptInState, ...]:
    """Every place where a module's forward call adds a graph to the module's own state."""
    return file_model.derived(_kept_in_state)


def _kept_in_state(file_model: FileModel) -> Tuple[KeptInState, ...]:
    found: List[KeptInState] = []
    for scope in file_model.scopes:
        cls = scope.class_name
        if cls is None or not _module_class(file_model, cls) or not file_model.part_of_forward(scope):
            continue
        kept = [*_own_stores(file_model, scope, cls), *_handed_to_helpers(file_model, scope, cls)]
        found.extend(k for k in kept if _about_losses(file_model, cls, k))
    return tuple(found)


def _about_losses(file_model: FileModel, cls: str, kept: KeptInState) -> bool:
    """A criterion's state, or a loss kept: the class is a loss (``FocalLoss``, a ``_Loss``
    subclass), or what is kept or where it goes is named as one (``self.losses[k] += loss_cls``).
    A module that logs its inputs or outputs for inspection (``self.call_args.append(x)``,
    ``self.log_scalings.append(scalings)`` behind a debug flag) keeps them on purpose."""
    if is_loss_name(cls) or any(last_name(base) in LOSS_BASES for base in file_model.class_bases.get(cls, ())):
        return True
    return is_loss_name(last_name(kept.container)) or any(map(is_loss_name, identifiers(kept.value)))


def _module_class(file_model: FileModel, cls: str) -> bool:
    """A module or criterion: what a training loop calls once per step."""
    if cls in file_model.roles.model_classes or file_model.is_module_class(cls):
        return True
    return any(last_name(base) in LOSS_BASES for base in file_model.class_bases.get(cls, ()))


def _own_stores(file_model: FileModel, scope: Scope, cls: str) -> Iterator[KeptInState]:
    """``self.total += loss`` and ``self.history.append(loss)`` of a value computed in ``scope``."""
    for store in stores(scope):
        if not store.container.startswith("self.") or store.kind == "keyed":
            continue
        # the scope's taint (a replay of its assignments) only for a store on ``self``: a
        # forward of most modules has none
        if not file_model.taint(scope).carries_graph_in_statement(store.value, store.site):
            continue
        if store.kind == "accumulate" and file_model.grad_at(store.site) is GradMode.NO_GRAD:
            continue  # the sum records no graph: a buffer's running statistics
        if _reset_per_call(file_model, cls, store.container, store.target):
            continue
        yield KeptInState(store.node, store.container, store.value)


def _handed_to_helpers(file_model: FileModel, scope: Scope, cls: str) -> Iterator[KeptInState]:
    """``self._track(loss)`` or ``self.meter.update(loss)``, where the method sums or appends
    that argument into its own ``self`` (``sinks.Meters``), with grad enabled."""
    meters = file_model.derived(Meters)
    if not meters.accumulating:
        return
    for call in scope.calls:
        container = call.receiver
        if container is None or not (container == "self" or container.startswith("self.")):
            continue
        methods = _called_methods(file_model, call)
        if not any(_state_stores(m) for m in methods):
            continue  # it adds by some other spelling (``self.seen.add(v)``, ``-=``): not read here
        if file_model.grad_at(call.site) is GradMode.NO_GRAD or _records_no_graph(file_model, methods):
            continue
        kept = meters.arguments_kept_by(cls, call) if container == "self" else meters.kept_arguments(call)
        for value in kept:
            if not file_model.taint(scope).carries_graph_in_statement(value, call.site):
                continue
            if not _helper_resets(file_model, cls, call, container):
                yield KeptInState(call.node, container, value)


def _called_methods(file_model: FileModel, call: CallSite) -> Tuple[Scope, ...]:
    """The methods of this file that ``self.track(v)`` or ``self.meter.update(v)`` runs."""
    helper = file_model.resolve(call)
    return (helper,) if helper is not None else file_model.instance_methods(call)


def _state_stores(method: Scope) -> List[Store]:
    """What ``method`` appends or adds to its own ``self``."""
    return [s for s in stores(method) if s.container.startswith("self.") and s.kind != "keyed"]


def _records_no_graph(file_model: FileModel, methods: Tuple[Scope, ...]) -> bool:
    """Does a method called add to its state with grad disabled: under a ``no_grad``
    decorator (a metric's ``update``), or every sum of it inside ``with torch.no_grad()``?
    (An ``append`` there would still keep the tensor, graph and all.)"""
    for method in methods:
        if method.decorator_grad is GradMode.NO_GRAD:
            return True
        kept = _state_stores(method)
        if kept and all(s.kind == "accumulate" and file_model.grad_at(s.site) is GradMode.NO_GRAD for s in kept):
            return True
    return False


def _helper_resets(file_model: FileModel, cls: str, call: CallSite, container: str) -> bool:
    """Is what the helper fills emptied by the same forward call: ``self.meter.reset()``, or
    every attribute ``self._track`` adds to rebound?"""
    if container != "self":
        return _reset_per_call(file_model, cls, container, None)
    helper = file_model.resolve(call)
    kept = _state_stores(helper) if helper is not None else []
    return bool(kept) and all(_reset_per_call(file_model, cls, s.container, s.target) for s in kept)


def _reset_per_call(file_model: FileModel, cls: str, container: str, target: Optional[cst.BaseExpression]) -> bool:
    """Does a method the forward call runs rebind, empty or zero what is added to?

    ``self.losses = {}`` (the container or an attribute above it), ``self.losses["cls"] = 0.0``
    (the very entry added to), ``del self.history[:]``, ``self.history.clear()``.
    """
    for scope in _per_call_methods(file_model, cls):
        for a in scope.assignments:
            if a.kind == "aug" or self_sum(a, container):
                continue  # adding is not resetting
            for t in a.targets:
                if a.kind == "del":
                    if dotted(t.value if isinstance(t, cst.Subscript) else t) == container:
                        return True
                    continue
                if any(container == bound or container.startswith(bound + ".") for bound in bound_paths(t)):
                    return True
                if target is not None and a.kind == "assign" and t.deep_equals(target):
                    return True
        if any(c.receiver == container and c.method in _RESETS for c in scope.calls):
            return True
    return False


def _per_call_methods(file_model: FileModel, cls: str) -> List[Scope]:
    """The methods of ``cls`` (or of the file's classes it is built on) that a forward call runs."""
    classes = {cls, *file_model.class_bases.get(cls, ())}
    return [s for s in file_model.scopes if s.class_name in classes and file_model.part_of_forward(s)]
