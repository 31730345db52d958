"""What a ``torch.load`` result is used as: weights, or a whole pickled object.

Since torch 2.6 ``torch.load`` loads weights only unless told otherwise: tensors,
containers of them and primitive values. A file that holds a pickled
``nn.Module``, an optimizer object or a NumPy array then fails to load
(``UnpicklingError``) unless its classes are allow-listed. The file cannot be
read here, but the code that uses the result can: a result that is called
(``net(x)``), asked a method that only modules and optimizers have
(``.eval()``, ``.parameters()``, ``.state_dict()``), or handed to
``torch.from_numpy`` holds such an object; so does an entry of it
(``checkpoint["decoder"].eval()``), one subscript deep, and the same value
moved with ``.to(device)``. Every other use says nothing (a state_dict, a
tensor and a checkpoint dict are all subscripted and moved alike), so a load
is called an object's only on that evidence, in the scope that loads it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Union

import libcst as cst

from torchlint.model.expr import positional
from torchlint.model.records import Assignment, CallSite

if TYPE_CHECKING:
    from torchlint.model import FileModel

# Methods a tensor, a dict and a list lack and a module (or optimizer) has: calling one on the
# loaded value says the file pickled such an object.
OBJECT_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules",
    "children", "named_children", "forward", "state_dict", "load_state_dict", "zero_grad",
})
# Calls that hand back the value they are called on, moved or cast: ``model = model.to(device)``.
SAME_VALUE_METHODS = frozenset({"to", "cuda", "cpu", "float", "half", "double"})
# Allow-listing the file's classes makes a weights-only load of whole objects work.
_ALLOW_LISTS = frozenset({"torch.serialization.add_safe_globals", "torch.serialization.safe_globals"})


def _name(node: Optional[cst.BaseExpression]) -> Optional[str]:
    return node.value if isinstance(node, cst.Name) else None


def _subscripted(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """``ckpt`` for ``ckpt["decoder"]``."""
    return _name(node.value) if isinstance(node, cst.Subscript) else None


def pickled_object_use(file_model: FileModel, load: CallSite) -> Optional[str]:
    """How the code uses what ``load`` (a ``torch.load`` call) returns as a pickled object, as it
    is written (``net2(...)``, ``decoder.eval()``); None without such evidence, or where the file
    allow-lists classes for weights-only loading."""
    if any(file_model.qualify(call) in _ALLOW_LISTS for call in file_model.calls):
        return None
    scope = load.scope
    direct = _direct_use(scope.calls, load.node)
    if direct is not None:
        return direct
    bound = next((a for a in scope.assignments
                  if a.kind == "assign" and a.value is load.node and len(a.targets) == 1 and _name(a.targets[0])),
                 None)
    if bound is None:
        return None
    loaded = _name(bound.targets[0])
    if loaded is None:
        return None
    # name -> True for the loaded value itself, False for an entry of it (no deeper)
    held: Dict[str, bool] = {loaded: True}
    events: List[Union[Assignment, CallSite]] = sorted(
        [a for a in scope.assignments if a.order > bound.order] + [c for c in scope.calls if c.order > bound.order],
        key=lambda event: event.order)
    later_calls = [c for c in scope.calls if c.order > bound.order]
    for event in events:
        # A binding's own value runs before the name is rebound (``net = net.eval()``), though the
        # builder numbers the statement before the calls in it.
        calls = [event] if isinstance(event, CallSite) else [c for c in later_calls if c.site.stmt is event.site.stmt]
        for call in calls:
            use = _use(file_model, call, held)
            if use is not None:
                return use
        if isinstance(event, Assignment):
            _rebind(event, held)
    return None


def _direct_use(calls: list, load_node: cst.Call) -> Optional[str]:
    """``torch.load(f)(x)`` or ``torch.load(f).eval()``."""
    for call in calls:
        func = call.node.func
        if func is load_node:
            return "torch.load(...)(...)"
        if isinstance(func, cst.Attribute) and func.value is load_node and func.attr.value in OBJECT_METHODS:
            return f"torch.load(...).{func.attr.value}()"
    return None


def _use(file_model: FileModel, call: CallSite, held: Dict[str, bool]) -> Optional[str]:
    func = call.node.func
    if _name(func) in held:
        return f"{_name(func)}(...)"
    if isinstance(func, cst.Attribute) and _name(func.value) in held and func.attr.value in OBJECT_METHODS:
        return f"{_name(func.value)}.{func.attr.value}()"
    if file_model.qualify(call) == "torch.from_numpy":
        argument = positional(call.node, 0)
        name = _name(argument) or _subscripted(argument)
        if name in held:
            return f"torch.from_numpy({name}...)"
    return None


def _rebind(assignment: Assignment, held: Dict[str, bool]) -> None:
    """Follow the loaded value through ``x = ckpt["key"]`` and ``x = x.to(device)``; any other
    binding of a followed name ends it."""
    targets = [_name(t) for t in assignment.targets] if assignment.kind in ("assign", "aug", "for", "with") else []
    single = targets[0] if len(targets) == 1 else None
    value = assignment.value
    if assignment.kind == "assign" and single is not None:
        entry_of = _subscripted(value)
        if entry_of is not None and held.get(entry_of):
            held[single] = False
            return
        receiver = _name(value.func.value) if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in SAME_VALUE_METHODS else None
        if receiver is not None and receiver in held:
            held[single] = held[receiver]
            return
    for target in targets:
        held.pop(target or "", None)
