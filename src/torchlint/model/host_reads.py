"""Tensors on the device, the calls that read them back to the host, and what for.

On a GPU, ``loss.item()``, ``out.cpu()``, ``acc.tolist()``, ``float(loss)``
and ``print(loss)`` copy a tensor to the host, and the host first waits for
every kernel queued before it: a synchronisation. This module answers three
questions about one function:

* which names hold a tensor on the device (``DeviceNames``): what ``.cuda()``
  or ``.to(device)`` return, a forward pass or a loss (in a file that trains on
  CUDA, the model runs there), and what tensor methods, torch functions,
  arithmetic and indexing compute from those. ``.item()``, ``.cpu()``, sizes,
  shapes, ``float()`` and functions it cannot read give host values: unknown
  is "not on the device", so a read is only ever claimed for a known tensor;
* which calls read such a tensor to the host (``host_reads``);
* what the value read is used for (``kept_only``): summed, appended, handed to
  a meter, a logger, a progress bar or ``print`` (an aggregate on the device
  would do), or needed at once (an ``if`` test, an index, an argument of a
  function that acts on it, such as ``env.step(action.item())``).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Set

import libcst as cst

from torchlint.model.devices import mentions_cuda
from torchlint.model.expr import bound_paths, dotted, keyword, positional
from torchlint.model.vocab import is_loss_name, is_model_name, last_name
from torchlint.model.walk import children

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, CallSite, Loop, Scope
    from torchlint.model import FileModel

# Tensor methods whose result lives on the host: a Python number or list, a size.
_HOST_METHODS = frozenset(
    "item tolist cpu numpy size dim numel nelement stride get_device data_ptr element_size __len__ "
    "is_contiguous is_floating_point ndimension".split()
)
_HOST_ATTRS = frozenset("shape dtype device ndim is_cuda requires_grad is_leaf grad_fn layout".split())
# Builtins that hand back the number or list they are given (``sum`` of device tensors is one).
_PASSING_BUILTINS = frozenset("sum min max abs".split())
# The calls that read a device tensor to the host, by method; ``to`` only towards the CPU.
READ_METHODS = frozenset(("item", "tolist", "cpu"))
READ_BUILTINS = frozenset(("float", "int"))
# Where a value read to the host may go when nothing needs it at once: containers,
# meters, loggers and progress bars, by method name, and ``print``.
_KEEPING_METHODS = frozenset(
    "append extend appendleft add update add_scalar add_scalars log info debug warning write "
    "set_postfix set_postfix_str set_description log_metrics log_dict record".split()
)
_KEEPING_FUNCTIONS = frozenset(("print",))
# Builtins and casts whose result is still just the number read.
_NUMBER_BUILTINS = frozenset("float int round abs min max sum str format".split())
_TEXT_METHODS = frozenset(("format", "join"))
_MAX_HOPS = 3


def to_host(file_model: FileModel, call: cst.Call) -> Optional[bool]:
    """For ``x.to(...)``: True towards the CPU, False towards another device, None when only
    the dtype changes (``x.to(torch.float16)``, ``x.to(dtype=...)``)."""
    target = positional(call, 0) or keyword(call, "device")
    return None if target is None else target_on_host(file_model, target)


def target_on_host(file_model: FileModel, target: cst.BaseExpression) -> Optional[bool]:
    """Does a device argument (``"cpu"``, ``device``, ``torch.device("cuda")``) name the host?
    None for a dtype (``torch.float16``). A name the file binds is taken for the device the
    file trains on: ``device``, ``args.device``, ``x.device``."""
    if isinstance(target, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return not mentions_cuda(target)
    if isinstance(target, cst.Call):
        inner = positional(target, 0)
        if file_model.names.qualify(dotted(target.func)) == "torch.device" and inner is not None:
            return not mentions_cuda(inner)
        return False
    qualified = file_model.names.qualify(dotted(target))
    if qualified is not None and qualified != "torch.device":
        return None  # torch.float16, torch.long: a dtype
    return False


def moves_to_device(file_model: FileModel, call: cst.Call) -> bool:
    """``x.cuda()``, ``x.to(device)``, ``x.to("cuda:0")``: a copy towards the device."""
    func = call.func
    if not isinstance(func, cst.Attribute) or file_model.names.qualify(dotted(func.value)) is not None:
        return False
    if func.attr.value == "cuda":
        return True
    return func.attr.value == "to" and to_host(file_model, call) is False


class DeviceNames:
    """The names of one function that hold device tensors, replayed in source order."""

    def __init__(self, file_model: FileModel, scope: Scope) -> None:
        self.file_model = file_model
        self._orders: List[int] = [0]
        self._states: List[frozenset] = [frozenset()]
        current: Set[str] = set()
        for a in sorted(scope.assignments, key=lambda a: a.order):
            before = frozenset(current)
            self._apply(a, before, current)
            if current != before:
                self._orders.append(a.order + 1)  # in effect after the assignment
                self._states.append(frozenset(current))

    def names_at(self, order: int) -> frozenset:
        return self._states[bisect.bisect_left(self._orders, order) - 1]

    def on_device(self, expr: Optional[cst.BaseExpression], order: int) -> bool:
        return expr is not None and self._on(expr, self.names_at(order))

    def _apply(self, a: Assignment, before: frozenset, current: Set[str]) -> None:
        if a.kind == "del":
            for target in a.targets:
                current.difference_update(bound_paths(target))
            return
        on = a.value is not None and self._on(a.value, before)
        if a.kind == "aug":
            path = dotted(a.targets[0])
            if path is not None and on:
                current.add(path)  # total += loss.detach(): the running sum stays on the device
            return
        for target in a.targets:
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(a.value, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(a.value.elements):
                for element, value in zip(target.elements, a.value.elements):
                    self._bind(element.value, self._on(value.value, before), current)
            else:
                self._bind(target, on, current)

    @staticmethod
    def _bind(target: cst.BaseExpression, on: bool, current: Set[str]) -> None:
        if isinstance(target, cst.Subscript):
            return  # d[k] = v changes what d holds, not what d is
        for path in bound_paths(target):
            if on:
                current.add(path)
            else:
                current.discard(path)

    def _model(self, path: str) -> bool:
        """A module moved with ``.to(device)`` is no tensor: printing it reads nothing back."""
        name = last_name(path)  # ``loss_D_VAE`` ends in a model word but names a loss
        return path in self.file_model.roles.models or (is_model_name(name) and not is_loss_name(name))

    def _on(self, expr: cst.BaseExpression, names: frozenset) -> bool:
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t is cst.Name:
            return e.value in names and not self._model(e.value)
        if t is cst.Attribute:
            path = dotted(e)
            if path is not None and path in names:
                return not self._model(path)
            return e.attr.value not in _HOST_ATTRS and self._on(e.value, names)
        if t is cst.Call:
            return self._call(e, names)
        if t is cst.Subscript:
            return self._on(e.value, names)
        if t is cst.BinaryOperation:
            return self._on(e.left, names) or self._on(e.right, names)
        if t is cst.Comparison:
            return self._on(e.left, names) or any(self._on(c.comparator, names) for c in e.comparisons)
        if t is cst.UnaryOperation:
            return not isinstance(e.operator, cst.Not) and self._on(e.expression, names)
        if t is cst.IfExp:
            return self._on(e.body, names) or self._on(e.orelse, names)
        if t in (cst.Tuple, cst.List):
            return any(self._on(el.value, names) for el in e.elements)
        return False

    def _call(self, expr: cst.Call, names: frozenset) -> bool:
        file_model = self.file_model
        func = expr.func
        if isinstance(func, cst.Attribute) and file_model.names.qualify(dotted(func.value)) is None:
            method = func.attr.value
            if method in _HOST_METHODS:
                return False
            if method == "cuda" or (method == "to" and to_host(file_model, expr) is False):
                return True
            if method == "to" and to_host(file_model, expr):
                return False
            if self._on(func.value, names):
                return True  # out.argmax(1), loss.detach(), x.float(), (p == y).sum()
        call = file_model.call_of(expr)
        if call is None:
            return False
        qualified = file_model.qualify(call)
        if qualified is not None:
            device = keyword(expr, "device")
            if device is not None:
                return target_on_host(file_model, device) is False
            return any(self._on(arg.value, names) for arg in expr.args)
        if call.callee in _PASSING_BUILTINS:
            return any(self._on(arg.value, names) for arg in expr.args)
        # A forward pass or a loss: in a file that trains on CUDA, the model runs there.
        return file_model.is_forward(call) or file_model.is_submodule_forward(call) or (
            file_model.is_loss_call(call) and any(self._on(arg.value, names) for arg in expr.args))


def device_names(file_model: FileModel, scope: Scope) -> DeviceNames:
    return file_model.derived(DeviceNames, scope)


@dataclass(frozen=True)
class HostRead:
    """A call that reads a device tensor to the host: ``loss.item()``, ``print(loss)``."""

    call: CallSite
    kind: str  # item, tolist, cpu, float, int, print


def host_reads(file_model: FileModel, loop: Loop) -> Iterator[HostRead]:
    """The calls inside ``loop`` (in its own function) that read a device tensor to the host."""
    names = device_names(file_model, loop.scope)
    for call in file_model.calls_in(loop):
        if call.scope is not loop.scope:
            continue  # a function defined inside the loop runs when it is called
        kind = _read_kind(file_model, names, call)
        if kind is not None:
            yield HostRead(call, kind)


def _read_kind(file_model: FileModel, names: DeviceNames, call: CallSite) -> Optional[str]:
    node = call.node
    func = node.func
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method in READ_METHODS or (method == "to" and to_host(file_model, node)):
            if file_model.names.qualify(dotted(func.value)) is None and names.on_device(func.value, call.order):
                return "cpu" if method == "to" else method
        return None
    if not isinstance(func, cst.Name) or func.value in file_model.names.bound_by_import:
        return None
    if func.value in READ_BUILTINS and len(node.args) == 1 and names.on_device(node.args[0].value, call.order):
        return func.value
    if func.value == "print" and any(_prints_device_tensor(names, arg.value, call.order) for arg in node.args):
        return "print"
    return None


def _prints_device_tensor(names: DeviceNames, value: cst.BaseExpression, order: int) -> bool:
    """``print(loss)``, ``print(f"{loss}")``: formatting a device tensor copies it to the host."""
    if isinstance(value, cst.FormattedString):
        return any(isinstance(part, cst.FormattedStringExpression) and names.on_device(part.expression, order)
                   for part in value.parts)
    return names.on_device(value, order)


# -- what the value read is used for --------------------------------------------

def kept_only(file_model: FileModel, read: HostRead, loop: Loop) -> bool:
    """Is the value read only kept (summed, stored, logged, printed, or left unused) in
    ``loop``, so that an aggregate on the device and one read later would do? False when
    something needs it at once: a test, an index, a function that acts on it."""
    if read.kind == "print":
        return True
    return _kept(file_model, read.call.node, loop, 0)


def _kept(file_model: FileModel, node: cst.CSTNode, loop: Loop, hops: int) -> bool:
    parents = file_model.parents
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and child is parent.test:
            return False  # the value decides what runs: an early stop, a skipped step
        if isinstance(parent, (cst.Comparison, cst.BooleanOperation, cst.Assert, cst.Return, cst.Yield,
                               cst.Lambda, cst.Index, cst.Slice)):
            return False
        if isinstance(parent, cst.Call) and child is not parent.func:
            return _kept_by_call(file_model, parent, loop, hops)
        if isinstance(parent, cst.AugAssign):
            return child is parent.value  # total += loss.item()
        if isinstance(parent, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return all(_kept_target(file_model, target, parent, loop, hops) for target in targets)
        if isinstance(parent, (cst.Expr, cst.SimpleStatementLine)):
            return True  # a statement of its own: nothing uses the value
        if isinstance(parent, (cst.BaseCompoundStatement, cst.BaseSmallStatement)):
            return False  # a with item, a for head, a raise, a del: not a plain value
        child, parent = parent, parents.get(id(parent))
    return False


def _kept_by_call(file_model: FileModel, call: cst.Call, loop: Loop, hops: int) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        if func.attr.value in _TEXT_METHODS:
            return _kept(file_model, call, loop, hops)  # "{:.3f}".format(loss.item()): still the number, as text
        return func.attr.value in _KEEPING_METHODS
    if isinstance(func, cst.Name) and func.value not in file_model.names.bound_by_import:
        if func.value in _KEEPING_FUNCTIONS:
            return True
        if func.value in _NUMBER_BUILTINS:
            return _kept(file_model, call, loop, hops)
    return False


def _kept_target(file_model: FileModel, target: cst.BaseExpression, statement: cst.CSTNode, loop: Loop,
                 hops: int) -> bool:
    """``loss_value = loss.item()``: kept when every use of ``loss_value`` in the loop keeps it.
    A subscript or attribute target stores the value (``history["loss"] = ...``); the name's
    own statement (``total = total + loss.item()``) only accumulates it."""
    if not isinstance(target, cst.Name):
        return isinstance(target, (cst.Subscript, cst.Attribute))
    if hops >= _MAX_HOPS:
        return False
    uses = list(_uses(file_model, loop.node.body, target.value, statement))
    return all(_kept(file_model, use, loop, hops + 1) for use in uses)


def _uses(file_model: FileModel, root: cst.CSTNode, name: str, statement: cst.CSTNode) -> Iterator[cst.Name]:
    """The reads of ``name`` under ``root`` outside ``statement``: Name nodes other than
    assignment targets."""
    stack: List[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if node is statement:
            continue
        if isinstance(node, cst.Name) and node.value == name:
            parent = file_model.parents.get(id(node))
            if not isinstance(parent, cst.AssignTarget):
                yield node
        stack.extend(children(node))
