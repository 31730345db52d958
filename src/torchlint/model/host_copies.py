"""Tensors made on the host and copied to the device on every iteration of a loop.

``torch.ones(batch_size, 1).to(device)`` in a training loop allocates a host
tensor, fills it and copies it to the device on every step; without
``non_blocking=True`` from pinned memory, the copy also makes the host wait
for the device's queue. A tensor whose value never changes in the loop can
be made once before it; a tensor that is only a fill (zeros, ones, a
constant, a range) can be made on the device itself (``device=``), where no
copy happens at all.

``host_copies`` lists, for one loop, the ``.to(device)``/``.cuda()`` calls
whose tensor a torch factory made on the host (no ``device=``): inline
(``torch.zeros(n).cuda()``), through casts and reshapes
(``torch.tensor(w).float().unsqueeze(0).cuda()``), or bound to a name, in the
loop or once before it (``mean = torch.tensor([...])`` then
``mean.to(device)`` inside). Random factories (``randn``) are left out: their
values change on every call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, Iterator, Optional, Tuple, Union

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, keyword
from torchlint.model.host_reads import moves_to_device, target_on_host, to_host
from torchlint.model.leaves import reaching_value
from torchlint.model.vocab import LEAF_WRAPPERS
from torchlint.model.walk import children

from torchlint.model.records import Loop

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Scope
    from torchlint.model import FileModel

# Factories whose values are a fill or a range: on the device they are made by a
# kernel, with no copy.
FILL_FACTORIES = frozenset("zeros ones full empty eye arange linspace logspace".split())
# Factories whose values come from host data: only making them once saves the copy.
_DATA_FACTORIES = frozenset(("tensor", "as_tensor", "from_numpy"))
_LEGACY_CONSTRUCTORS = frozenset(
    "Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor CharTensor "
    "ByteTensor BoolTensor".split()
)
# Methods that keep the tensor on the host and its values fixed: casts, reshapes, fills.
_HOST_PASSING = frozenset(
    "float double half bfloat16 long int short bool byte unsqueeze squeeze view reshape flatten t "
    "contiguous expand repeat fill_ zero_ requires_grad_ type".split()
)
# Calls an argument may hold and still be the same on every iteration.
_PURE_BUILTINS = frozenset("len range list tuple int float bool abs min max round".split())
_PURE_METHODS = frozenset(("size", "numel", "dim"))
# Methods that change their receiver: ``tokens.append(t)`` makes ``torch.tensor(tokens)`` differ.
_MUTATING_METHODS = frozenset("append extend insert pop remove clear update add setdefault sort reverse".split())


@dataclass(frozen=True)
class HostCopy:
    """A ``.to(device)``/``.cuda()`` call in a loop, copying a tensor a factory made on the host."""

    call: CallSite
    factory: cst.Call  # the torch factory call that made the tensor
    name: str  # the factory's name: zeros, tensor, FloatTensor
    invariant: bool  # the factory's arguments are the same on every iteration
    made_before: bool = False  # bound to a name before the loop: only the copy repeats


def host_copies(file_model: FileModel, span: Union[Loop, Scope]) -> Iterator[HostCopy]:
    """The copies in one pass through ``span``: a loop's iteration, or one call of a function
    (whose parameters and locals may differ from call to call)."""
    scope = span.scope if isinstance(span, Loop) else span
    bound = _bound_in(file_model, span, scope)
    for call in file_model.calls_in(span):
        if call.scope is not scope or not moves_to_device(file_model, call.node):
            continue
        func = call.node.func
        assert isinstance(func, cst.Attribute)  # moves_to_device: a method call
        made = _host_factory(file_model, _strip(file_model, func.value))
        if made is not None:
            yield HostCopy(call, made[0], made[1], _invariant(file_model, made[0], bound))
            continue
        path = dotted(func.value)
        reaching = reaching_value(file_model, scope, path, call.order) if path is not None else None
        if reaching is None:
            continue
        binding, value = reaching
        made = _host_factory(file_model, _strip(file_model, value)) if value is not None else None
        if made is None:
            continue
        if binding.order < span.start:  # made once before the loop, copied on every iteration
            if path not in bound:
                yield HostCopy(call, made[0], made[1], True, made_before=True)
        else:
            yield HostCopy(call, made[0], made[1], _invariant(file_model, made[0], bound))


def _strip(file_model: FileModel, expr: cst.BaseExpression) -> cst.BaseExpression:
    """Through casts, reshapes and fills on the host, and ``Variable(...)`` wrappers."""
    while isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and file_model.names.qualify(dotted(func.value)) is None:
            if func.attr.value in _HOST_PASSING or (func.attr.value == "to" and to_host(file_model, expr) is None):
                expr = func.value
                continue
        last = (dotted(func) or "").rsplit(".", 1)[-1]
        if last in LEAF_WRAPPERS and expr.args and expr.args[0].keyword is None:
            expr = expr.args[0].value
            continue
        break
    return expr


def _host_factory(file_model: FileModel, expr: Optional[cst.BaseExpression]) -> Optional[Tuple[cst.Call, str]]:
    """``(call, "zeros")`` for ``torch.zeros(n)`` made on the host: no ``device=``, or ``device="cpu"``."""
    if not isinstance(expr, cst.Call):
        return None
    qualified = file_model.names.qualify(dotted(expr.func)) or ""
    module, _, name = qualified.rpartition(".")
    if module != "torch" or name not in FILL_FACTORIES | _DATA_FACTORIES | _LEGACY_CONSTRUCTORS:
        return None
    device = keyword(expr, "device")
    if device is not None and not target_on_host(file_model, device):
        return None
    return expr, name


def _bound_in(file_model: FileModel, span: Union[Loop, Scope], scope: Scope) -> FrozenSet[str]:
    """The paths whose value may differ from one pass through ``span`` to the next: bound or
    changed in it (``x = ...``, ``for x in``, ``x += ...``, ``x[i] = ...``, ``x.append(...)``),
    and a function's parameters."""
    found = set() if isinstance(span, Loop) else set(scope.params)
    for a in scope.assignments:
        if span.contains(a.order):
            for target in a.targets:
                found.update(bound_paths(target))
                while isinstance(target, (cst.Subscript, cst.Attribute)):
                    target = target.value  # x[i] = v, x.attr = v change what x holds
                    path = dotted(target)
                    if path is not None:
                        found.add(path)
    for call in file_model.calls_in(span):
        if call.receiver is not None and (call.method in _MUTATING_METHODS or (call.method or "").endswith("_")):
            found.add(call.receiver)
    return frozenset(found)


def _invariant(file_model: FileModel, factory: cst.Call, bound: FrozenSet[str]) -> bool:
    """Are the factory's arguments the same on every iteration: literals, and names the loop
    never rebinds, combined by arithmetic and the few pure calls a shape is written with?"""
    stack: list = [arg.value for arg in factory.args]
    while stack:
        node = stack.pop()
        path = dotted(node)
        if path is not None:
            head = path.split(".", 1)[0]
            if path in bound or head in bound:
                return False
            continue
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Name) and func.value in _PURE_BUILTINS:
                stack.extend(arg.value for arg in node.args)
                continue
            if isinstance(func, cst.Attribute) and func.attr.value in _PURE_METHODS:
                stack.append(func.value)
                stack.extend(arg.value for arg in node.args)
                continue
            if file_model.names.qualify(dotted(func)) is not None and (dotted(func) or "").endswith("Size"):
                stack.extend(arg.value for arg in node.args)
                continue
            return False  # a function that may answer differently each time
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)):
            return False
        stack.extend(children(node))
    return True
