"""What a tensor went through last, and what a loss wants it to have gone through.

``CrossEntropyLoss`` applies ``log_softmax`` itself and wants raw logits;
``NLLLoss`` wants log-probabilities; ``BCEWithLogitsLoss`` applies ``sigmoid``
itself; ``BCELoss`` wants probabilities. Whether the input of such a loss went
through a softmax or a sigmoid, or comes raw out of a linear layer, is read by
following the value back:

* the activation applied in the same function, inline or bound to a name first
  (``probs = F.softmax(out, 1)``), through reshapes and moves (``.view(-1, C)``);
* the end of a model's own ``forward`` (a class of this file: the activation
  of every ``return``), of an ``nn.Sequential`` built here (its last layer but
  dropout and the like), or of a layer (``self.softmax = nn.Softmax(dim=1)``,
  ``self.fc = nn.Linear(...)``), found from what the model was built as
  (``model/constructions.py``);
* a function of this module that returns the tensor.

An ending is known only when every way the value may take agrees: a ``forward``
that returns logits in training and probabilities in evaluation has none, and
neither has anything the file does not show.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model import vocab
from torchlint.model.constructions import Built, built_from, class_and_bases, constructions, one_torch_class
from torchlint.model.constructions import reaching_bindings
from torchlint.model.expr import bound_values, dotted, keyword, positional
from torchlint.model.roles import _MOVES  # what hands back the module it is called on

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Scope

SOFTMAX, LOG_SOFTMAX, SIGMOID, LOGITS = "softmax", "log_softmax", "sigmoid", "logits"
_MAX_DEPTH = 12


@dataclass(frozen=True)
class Ending:
    """The last thing a tensor went through: ``kind`` (softmax, log_softmax, sigmoid, or logits
    for a linear or convolution layer), the call that applies it, how it is written
    (``F.softmax``, ``nn.Sigmoid``) and where (``Net.forward``)."""

    kind: str
    node: cst.Call
    written: str
    where: str
    via: str = ""  # the model's forward that returns it, when the loss's function calls a model

    def describe(self) -> str:
        """``nn.Softmax in Net.__init__, returned by Net.forward`` for a message."""
        said = f"{self.written} in {self.where}"
        return f"{said}, returned by {self.via}" if self.via and self.via != self.where else said


# An ending, a tuple of them for a tuple of tensors (``return logits, probs``), or None: unknown.
Shape = Union[None, Ending, Tuple["Shape", ...]]


def ending(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, order: int) -> Shape:
    """What ``expr``, read at ``order`` in ``scope``, went through last."""
    return _Endings(file_model).of(scope, expr, order, 0)


def paired_loss(file_model: FileModel, call: CallSite) -> Optional[Tuple[str, cst.BaseExpression]]:
    """``(loss, input)`` for a call computing one of torch's paired losses (``vocab.PAIRED_LOSSES``:
    cross_entropy, nll, bce, bce_logits), functional or a module built in this file; None otherwise."""
    loss = vocab.PAIRED_LOSSES.get(file_model.qualify(call) or "")
    if loss is None and _may_hold_loss(file_model, call):
        func = call.node.func
        found = (built_from(file_model, call.scope, func, call.order) if isinstance(func, cst.Call)
                 else constructions(file_model, call.scope, call.callee or "", call.order))
        loss = vocab.PAIRED_LOSSES.get(one_torch_class(file_model, found) or "")
    if loss is None:
        return None
    value = positional(call.node, 0) or keyword(call.node, "input")
    return (loss, value) if value is not None else None


def _may_hold_loss(file_model: FileModel, call: CallSite) -> bool:
    """A cheap first look before following constructions: the call is a module built inline
    (``nn.CrossEntropyLoss()(out, y)``), a name some statement of the file binds to a paired
    loss (``self.criterion`` included), or a parameter (whose callers may pass one)."""
    if isinstance(call.node.func, cst.Call):
        return True
    callee = call.callee
    if callee is None:
        return False
    if callee in file_model.derived(_loss_bound_paths):
        return True
    root = callee.split(".", 1)[0]
    return root == callee and root in call.scope.params  # not ``self.fc(x)``: ``self`` is a parameter too


def _loss_bound_paths(file_model: FileModel) -> frozenset:
    """The paths bound to a paired loss's module: ``criterion = nn.CrossEntropyLoss()``, also
    moved (``nn.BCELoss().cuda()``) or one of several bound at once (``adv, aux = nn.BCELoss(),
    nn.CrossEntropyLoss()``)."""
    found: Set[str] = set()
    for a in file_model.assignments:
        if a.kind != "assign":
            continue
        for target in a.targets:
            for path, value in bound_values(target, a.value):
                while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                        and value.func.attr.value in _MOVES:
                    value = value.func.value
                if isinstance(value, cst.Call):
                    qualified = file_model.names.qualify(dotted(value.func)) or ""
                    if qualified in vocab.PAIRED_LOSSES and qualified.rsplit(".", 1)[-1][:1].isupper():
                        found.add(path)
    return frozenset(found)


def _where(scope: Scope) -> str:
    if scope.is_module:
        return "module-level code"
    return f"{scope.class_name}.{scope.name}" if scope.class_name else f"{scope.name}()"


def _agree(shapes: List[Shape]) -> Shape:
    """The shape every candidate has: one kind for each tensor, else unknown."""
    if not shapes or any(s is None for s in shapes):
        return None
    first = shapes[0]
    if isinstance(first, Ending):
        same = all(isinstance(s, Ending) and s.kind == first.kind for s in shapes)
        return first if same else None
    tuples = [s for s in shapes if isinstance(s, tuple)]
    if len(tuples) != len(shapes) or len({len(t) for t in tuples}) != 1:
        return None
    return tuple(_agree([t[i] for t in tuples]) for i in range(len(tuples[0])))


def _class_output(file_model: FileModel, cls: str) -> Shape:
    """What calling an instance of ``cls`` (a class of this file) returns: the agreed ending
    of every ``return`` of its ``forward`` (its own or a base's in this file)."""
    for owner in class_and_bases(file_model, cls):
        forward = file_model.methods.get((owner, "forward"))
        if forward is not None:
            endings = _Endings(file_model)
            shape = _agree([endings.of(forward, value, site.order, 0) for site, value in forward.returns])
            return _returned_by(shape, f"{cls}.forward")
    return None


def _returned_by(shape: Shape, via: str) -> Shape:
    if isinstance(shape, Ending):
        return shape if shape.via else replace(shape, via=via)
    if isinstance(shape, tuple):
        return tuple(_returned_by(s, via) for s in shape)
    return None


class _Endings:
    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model

    def of(self, scope: Scope, expr: cst.BaseExpression, order: int, depth: int) -> Shape:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            return self._call(scope, expr, order, depth)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            path = dotted(expr)
            return self._name(scope, path, order, depth) if path is not None else None
        if isinstance(expr, cst.Subscript):
            inner = self.of(scope, expr.value, order, depth + 1)
            if isinstance(inner, tuple):
                return _element(inner, expr)
            return inner  # ``probs[:, -1]``, ``out[0]`` of one tensor: the same values
        if isinstance(expr, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return tuple(self.of(scope, e.value, order, depth + 1) for e in expr.elements)  # ``return logits, probs``
        return None

    def _name(self, scope: Scope, path: str, order: int, depth: int) -> Shape:
        bindings = reaching_bindings(self.file_model, scope, path, order)
        shapes: List[Shape] = []
        for binding in bindings:
            if binding.value is None:
                return None
            shape = self.of(scope, binding.value, binding.assignment.order, depth + 1)
            if binding.index is not None:
                shape = shape[binding.index] if isinstance(shape, tuple) and binding.index < len(shape) else None
            shapes.append(shape)
        return _agree(shapes)  # nothing bound here (a parameter, a global): unknown

    def _call(self, scope: Scope, expr: cst.Call, order: int, depth: int) -> Shape:
        file_model, func = self.file_model, expr.func
        callee = dotted(func)
        qualified = file_model.names.qualify(callee)
        if qualified is not None:
            kind = vocab.ACTIVATION_FUNCTIONS.get(qualified)
            return Ending(kind, expr, callee or "", _where(scope)) if kind else None
        if isinstance(func, cst.Call):  # ``nn.Softmax(dim=1)(x)``
            return self._module_output(Built(func, scope, order), depth + 1)
        holder = vocab.called_module(callee) if callee is not None else None
        if holder == "self":
            cls = file_model.enclosing_class(scope)
            return file_model.derived(_class_output, cls, while_computing=None) if cls else None
        # ``self.softmax(x)`` runs a layer the class built; ``x.softmax(1)`` is the tensor method.
        found = constructions(file_model, scope, holder, order) if holder is not None else None
        if found is not None:
            return _agree([self._module_output(b, depth + 1) for b in found])
        if isinstance(func, cst.Attribute) and (dotted(func.value) or "").split(".", 1)[0] not in ("self", "cls"):
            method = func.attr.value
            if method in vocab.ACTIVATION_METHODS:
                return Ending(vocab.ACTIVATION_METHODS[method], expr, f".{method}()", _where(scope))
            if method in vocab.LAYOUT_METHODS:
                return self.of(scope, func.value, order, depth + 1)
        call = file_model.call_of(expr)
        target = file_model.resolve(call) if call is not None else None
        if target is None or not target.returns or target is scope:
            return None
        return _agree([self.of(target, value, site.order, depth + 1) for site, value in target.returns])

    def _module_output(self, built: Built, depth: int) -> Shape:
        """What calling the module ``built`` builds returns: a layer's own activation, the last
        layer of an ``nn.Sequential``, or the ``forward`` of a class of this file."""
        file_model = self.file_model
        callee = dotted(built.call.func)
        if callee is None or depth > _MAX_DEPTH:
            return None
        qualified = file_model.names.qualify(callee) or ""
        if qualified.startswith("torch.nn."):
            name = qualified.rsplit(".", 1)[-1]
            if name == "Sequential":
                return self._sequential(built, depth)
            kind = vocab.ACTIVATION_LAYERS.get(name)
            return Ending(kind, built.call, callee, _where(built.scope)) if kind else None
        if callee in file_model.class_bases:
            return file_model.derived(_class_output, callee, while_computing=None)
        return None

    def _sequential(self, built: Built, depth: int) -> Shape:
        layers = _sequential_layers(built.call)
        for layer in reversed(layers or ()):
            found = built_from(self.file_model, built.scope, layer, built.order)
            if found is None:
                return None
            if all(self._transparent(b) for b in found):
                continue  # dropout and the like: the layer before decides
            return _agree([self._module_output(b, depth + 1) for b in found])
        return None

    def _transparent(self, built: Built) -> bool:
        qualified = self.file_model.names.qualify(dotted(built.call.func)) or ""
        return qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1] in vocab.TRANSPARENT_LAYERS


def _sequential_layers(call: cst.Call) -> Optional[List[cst.BaseExpression]]:
    """The layers of ``nn.Sequential(a, b, c)`` or ``nn.Sequential(OrderedDict([("a", a), ...]))``,
    in order; None where they cannot be read (``nn.Sequential(*layers)``)."""
    if any(arg.star or arg.keyword is not None for arg in call.args):
        return None
    values = [arg.value for arg in call.args]
    if len(values) == 1 and isinstance(values[0], cst.Call) and (dotted(values[0].func) or "").endswith("OrderedDict"):
        pairs = positional(values[0], 0)
        if not isinstance(pairs, (cst.List, cst.Tuple)):
            return None
        layers = []
        for element in pairs.elements:
            pair = element.value
            if not isinstance(pair, (cst.Tuple, cst.List)) or len(pair.elements) != 2:
                return None
            layers.append(pair.elements[1].value)
        return layers
    return values


def _element(shape: Tuple[Shape, ...], expr: cst.Subscript) -> Shape:
    """``out[1]`` of a tuple of tensors: the element at a literal index."""
    if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
        return None
    index = expr.slice[0].slice.value
    negative = isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.Minus)
    number = index.expression if negative and isinstance(index, cst.UnaryOperation) else index
    if not isinstance(number, cst.Integer):
        return None
    position = -int(number.value) if negative else int(number.value)
    return shape[position] if -len(shape) <= position < len(shape) else None


@dataclass(frozen=True)
class LossInput:
    """A call of a paired loss (``vocab.PAIRED_LOSSES``), its input and what the input went through."""

    call: CallSite
    loss: str
    input: cst.BaseExpression
    ending: Shape

    def ends_in(self, *kinds: str) -> Optional[Ending]:
        """The input's ending when it is one of ``kinds``."""
        return self.ending if isinstance(self.ending, Ending) and self.ending.kind in kinds else None


def loss_inputs(file_model: FileModel) -> Tuple[LossInput, ...]:
    """Every call of a paired loss in the file, with its input's ending; computed once per file."""
    return file_model.derived(_loss_inputs)


def _loss_inputs(file_model: FileModel) -> Tuple[LossInput, ...]:
    found = []
    for call in file_model.calls:
        pair = paired_loss(file_model, call)
        if pair is not None:
            loss, value = pair
            found.append(LossInput(call, loss, value, ending(file_model, call.scope, value, call.order)))
    return tuple(found)
