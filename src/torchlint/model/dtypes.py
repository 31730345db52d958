"""What dtype a tensor visibly has where it is made, and whether it requires grad.

Read from the expression that builds it and, for a name, from the last
assignment to it earlier in the same function: ``torch.randn(3)`` is float32
(the default dtype), ``x.double()`` float64, ``x.to(device)`` keeps ``x``'s
dtype, a function parameter is unknown. Unknown is never guessed: rules
report only what they can see.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from torchlint.model.expr import dotted, keyword, literal_bool, positional
from torchlint.model.vocab import DEFAULT_DTYPE_FACTORIES, LIKE_FACTORIES, tokens

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.model import FileModel

LOW = frozenset("float float32 half float16 bfloat16 cfloat complex64 chalf complex32".split())
HIGH = frozenset("double float64 cdouble complex128".split())
_CAST_METHODS = {"float": "low", "half": "low", "bfloat16": "low", "cfloat": "low",
                 "double": "high", "cdouble": "high"}
# Methods whose result has the receiver's dtype (no other tensor takes part).
_KEEPS_DTYPE = frozenset(
    "requires_grad_ detach detach_ clone cuda cpu contiguous t view reshape transpose permute "
    "unsqueeze squeeze expand flatten normal_ uniform_ fill_ zero_ pin_memory share_memory_".split()
)
_DEVICE_WORDS = frozenset(("device", "dev", "cuda", "cpu", "gpu", "rank"))
_VARIABLE = frozenset(("torch.autograd.Variable", "torch.autograd.variable.Variable"))


@dataclass(frozen=True)
class Origin:
    """Where a tensor's dtype was decided. ``precision`` is "low" (float32 and
    narrower) or "high" (float64, complex128); ``node`` is what a fix edits: the
    factory call that lacks ``dtype=``, the dtype expression, or the ``.float()`` call."""

    precision: str
    node: cst.CSTNode
    kind: str  # "factory" (no dtype= yet), "dtype" (a dtype expression), "cast" (.float())
    requires_grad: bool = False


def dtype_precision(file_model: FileModel, expr: Optional[cst.BaseExpression]) -> Optional[str]:
    """"low" for ``torch.float32``/``torch.half``, "high" for ``torch.double``, else None."""
    qualified = file_model.names.qualify(dotted(expr)) if expr is not None else None
    if qualified is None or not qualified.startswith("torch.") or qualified.count(".") != 1:
        return None
    name = qualified.split(".", 1)[1]
    return "low" if name in LOW else "high" if name in HIGH else None


def default_dtype_changed(file_model: FileModel) -> bool:
    """The file changes the default dtype, so ``torch.randn(3)`` may be float64."""
    return any(c.method in ("set_default_dtype", "set_default_tensor_type") for c in file_model.calls)


class DtypeReader:
    """Answers ``origin(expr, scope, order)`` for the values of one file."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.default_known = not default_dtype_changed(file_model)

    def origin(self, expr: Optional[cst.BaseExpression], scope: Scope, order: int, depth: int = 0) -> Optional[Origin]:
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            return self._name_origin(expr.value, scope, order, depth)
        if isinstance(expr, cst.Call):
            return self._call_origin(expr, scope, order, depth)
        return None

    def _name_origin(self, name: str, scope: Scope, order: int, depth: int) -> Optional[Origin]:
        bindings = [a for a in scope.assignments
                    if a.order < order and any(_binds(t, name) for t in a.targets)]
        if not bindings:
            return None
        last = bindings[-1]
        if last.kind != "assign" or len(last.targets) != 1 or dotted(last.targets[0]) != name:
            return None  # a loop variable, a tuple unpacking, ``x += ...``: not followed
        found = self.origin(last.value, scope, last.order, depth + 1)
        if found is not None and not found.requires_grad and self._grad_switched_on(name, scope, last.order, order):
            found = Origin(found.precision, found.node, found.kind, True)
        return found

    def _grad_switched_on(self, name: str, scope: Scope, start: int, end: int) -> bool:
        """``x.requires_grad_()`` or ``x.requires_grad = True`` between binding and use."""
        for call in scope.calls:
            if start < call.order < end and call.receiver == name and call.method == "requires_grad_":
                flag = positional(call.node, 0) or keyword(call.node, "requires_grad")
                if flag is None or literal_bool(flag) is True:
                    return True
        for a in scope.assignments:
            if start < a.order < end and a.kind == "assign" and literal_bool(a.value) is True and any(
                dotted(t) == f"{name}.requires_grad" for t in a.targets
            ):
                return True
        return False

    def _call_origin(self, call: cst.Call, scope: Scope, order: int, depth: int) -> Optional[Origin]:
        func = call.func
        qualified = self.file_model.names.qualify(dotted(func))
        if qualified is not None and qualified.startswith("torch.") and qualified.count(".") == 1:
            return self._factory_origin(call, qualified.split(".", 1)[1], scope, order, depth)
        if qualified in _VARIABLE:  # ``Variable(torch.randn(3), requires_grad=True)`` keeps the dtype
            inner = self.origin(positional(call, 0), scope, order, depth + 1)
            grad = literal_bool(keyword(call, "requires_grad") or positional(call, 1)) is True
            return Origin(inner.precision, inner.node, inner.kind, inner.requires_grad or grad) if inner else None
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in _CAST_METHODS and not call.args:
            return Origin(_CAST_METHODS[method], call, "cast")
        if method in ("to", "type"):
            return self._to_origin(call, scope, order, depth)
        if method in _KEEPS_DTYPE:
            inner = self.origin(func.value, scope, order, depth + 1)
            if inner is not None and method == "requires_grad_":
                flag = positional(call, 0) or keyword(call, "requires_grad")
                if flag is None or literal_bool(flag) is True:
                    return Origin(inner.precision, inner.node, inner.kind, True)
            return inner
        return None

    def _factory_origin(self, call: cst.Call, name: str, scope: Scope, order: int, depth: int) -> Optional[Origin]:
        if any(arg.star == "**" for arg in call.args):
            return None  # ``**kwargs`` may hold the dtype
        grad = literal_bool(keyword(call, "requires_grad")) is True
        dtype = keyword(call, "dtype")
        if dtype is not None:
            precision = dtype_precision(self.file_model, dtype)
            return Origin(precision, dtype, "dtype", grad) if precision else None
        if name in DEFAULT_DTYPE_FACTORIES or (name == "tensor" and _float_literals(positional(call, 0))):
            return Origin("low", call, "factory", grad) if self.default_known else None
        if name in LIKE_FACTORIES:
            inner = self.origin(positional(call, 0), scope, order, depth + 1)
            return Origin(inner.precision, inner.node, inner.kind, grad) if inner else None
        return None

    def _to_origin(self, call: cst.Call, scope: Scope, order: int, depth: int) -> Optional[Origin]:
        """``x.to(torch.float32)`` decides the dtype; ``x.to(device)`` keeps ``x``'s."""
        for target in (keyword(call, "dtype"), positional(call, 0), positional(call, 1)):
            precision = dtype_precision(self.file_model, target)
            if precision is not None and target is not None:  # a precision: there is a target
                return Origin(precision, target, "dtype")
        target = positional(call, 0) or keyword(call, "device")
        if keyword(call, "dtype") is not None or positional(call, 1) is not None or not _is_device(target):
            return None  # a dtype we cannot read, or a tensor to copy the dtype of
        assert isinstance(call.func, cst.Attribute)  # ``x.to(...)``, ``x.type(...)``
        return self.origin(call.func.value, scope, order, depth + 1)


def _float_literals(data: Optional[cst.BaseExpression]) -> bool:
    """``[1.0, 2.0]``, ``[[0.5, 1], [2, 3]]``: numbers only, one of them a float literal, so
    ``torch.tensor(data)`` has the default dtype (not a numpy array's, nor int64)."""
    numbers = []
    todo = [data]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.List, cst.Tuple)):
            todo.extend(el.value for el in node.elements if not isinstance(el, cst.StarredElement))
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            todo.append(node.expression)
        elif isinstance(node, (cst.Integer, cst.Float)):
            numbers.append(node)
        else:
            return False
    return any(isinstance(n, cst.Float) for n in numbers)


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(el.value, name) for el in target.elements)
    if isinstance(target, cst.StarredElement):
        return _binds(target.value, name)
    return dotted(target) == name


def _is_device(expr: Optional[cst.BaseExpression]) -> bool:
    """``"cuda"``, ``device``, ``args.device``, ``x.device``: a device, never a dtype."""
    if expr is None:
        return False
    if isinstance(expr, cst.SimpleString):
        return True
    path = dotted(expr)
    if path is None:
        return isinstance(expr, cst.Call) and "device" in (dotted(expr.func) or "")
    return any(t in _DEVICE_WORDS for t in tokens(path.rsplit(".", 1)[-1]))
