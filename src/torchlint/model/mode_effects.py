"""Does a model compute the same thing in training and in eval mode?

``model.eval()`` only changes layers that read ``self.training``: dropout,
batch-norm, RReLU, recurrent layers with inter-layer dropout. A model built
only from layers that ignore the mode (an embedding, a GRU, linear layers,
ReLUs) gives the same numbers either way, so a forgotten ``eval()`` changes
nothing. The model must be built in the file from torch.nn layers, classes
defined in the file, and classes of the project's other modules that this same
definition finds mode-free on their own module (``ProjectView.class_fact``).
Anything else (a library model, a builder function imported from elsewhere, a
loaded model, ``nn.Sequential(*layers)`` of layers we cannot see) may hold dropout.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, identifiers, keyword, positional
from torchlint.model.modes import model_key
from torchlint.model.vocab import (
    CALL, LITERAL, MODE_FREE_BUILTINS, NOT_A_LITERAL, STORE_METHODS, SUBSCRIPT, is_torch_nn_layer, layer_mode_free,
    names_submodules, torch_call_mode_free, zero_literal,
)
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Scope
    from torchlint.model import FileModel

# Wrappers that run the module they hold: as mode-dependent as it is.
_PARALLEL_WRAPPERS = frozenset(("torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                                "torch.nn.parallel.DistributedDataParallel"))
# Wrappers that return the model they are called on, in the same mode behaviour.
_SAME_MODEL_METHODS = frozenset("to cuda cpu float double half bfloat16 train eval requires_grad_".split())


def mode_free_model(file_model: FileModel, target: str) -> bool:
    """Is every model the file binds to ``target``'s name built only from layers that
    ignore train/eval mode? False when any binding is not such a construction."""
    return file_model.derived(_mode_free_model, model_key(target))


def _mode_free_model(file_model: FileModel, key: str) -> bool:
    return _Checker(file_model).model_name(key) is True


def loaded_in_training_mode(file_model: FileModel, target: str) -> bool:
    """Is every model the file binds to ``target``'s name built here with a layer that surely
    acts differently in training mode (batch-norm, dropout with a rate that is not zero), in
    a class of the file or an ``nn.Sequential``, and given trained weights with
    ``target.load_state_dict(...)``? A module starts in training mode and loading weights
    keeps it there: predictions from it drop activations and normalise by the batch. Not a
    whole model from ``torch.load`` or ``from_pretrained`` (they keep, or set, the mode it
    was saved in), nor ``Net().eval()``."""
    return file_model.derived(_loaded_in_training_mode, model_key(target))


def _loaded_in_training_mode(file_model: FileModel, key: str) -> bool:
    if not any(c.method == "load_state_dict" and c.receiver and model_key(c.receiver) == key
               for c in file_model.calls):
        return False
    values = [a.value for a in file_model.assignments
              if any(model_key(p) == key for t in a.targets for p in bound_paths(t))]
    return bool(values) and all(_built_in_training_mode(file_model, v, set()) for v in values)


def _built_in_training_mode(file_model: FileModel, value: Optional[cst.BaseExpression], seen: set) -> bool:
    """``Net(...)``, ``nn.Sequential(...)``, either followed by ``.to(device)``, holding a
    layer that surely reads the mode."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in _SAME_MODEL_METHODS:
        if value.func.attr.value in ("train", "eval"):
            return False  # ``Net().eval()``: put in a mode on the spot
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    callee = dotted(value.func)
    if callee in file_model.class_bases:
        return _class_reads_the_mode(file_model, callee, seen)
    return file_model.names.qualify(callee) == "torch.nn.Sequential" and _holds_mode_layer(file_model, value)


def _class_reads_the_mode(file_model: FileModel, cls: str, seen: set) -> bool:
    """A class of the file that builds a mode-reading layer, itself or through a base of the
    file, none of which minds its own mode (``self.eval()`` in ``__init__``, a ``train()`` of its own)."""
    lineage, todo = [], [cls]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        lineage.append(name)
        todo.extend(base for base in file_model.class_bases.get(name, ()) if base in file_model.class_bases)
    methods = [scope for scope in file_model.scopes if file_model.enclosing_class(scope) in lineage]
    if any(scope.name in ("train", "eval") or any(c.method in ("train", "eval") and c.receiver == "self"
                                                  for c in scope.calls) for scope in methods):
        return False
    return any(_mode_layer(file_model, c.node) for scope in methods for c in scope.calls)


def _holds_mode_layer(file_model: FileModel, call: cst.Call) -> bool:
    return any(_mode_layer(file_model, c) for c in _calls_in(call))


def _mode_layer(file_model: FileModel, call: cst.Call) -> bool:
    """``nn.BatchNorm2d(16)``, ``nn.Dropout()``, ``nn.Dropout(0.3)``: not a dropout whose rate
    we cannot read (a config's ``dropout`` may be 0)."""
    qualified = file_model.names.qualify(dotted(call.func)) or ""
    if not is_torch_nn_layer(qualified):
        return False
    name = qualified.rsplit(".", 1)[-1]
    if "BatchNorm" in name:
        return True
    if not name.endswith("Dropout") and not name.startswith("Dropout"):
        return False
    rate = keyword(call, "p") or positional(call, 0)
    if rate is None:
        return True  # the default rate, 0.5
    return isinstance(rate, (cst.Integer, cst.Float)) and not zero_literal(rate.value)


def _combined(answers: Iterable[Optional[bool]]) -> Optional[bool]:
    """False if any part may depend on the mode, else True if some part was seen built, else
    None: nothing but names that lead back to what is being judged, or empty containers."""
    seen = None
    for answer in answers:
        if answer is False:
            return False
        if answer is True:
            seen = True
    return seen


class _Checker:
    """Answers True (built here, mode-free), False (may read the mode, or unknown) or None
    (no construction seen: ``self.model = model`` leads back to the name being judged)."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.names = file_model.names
        self._classes: dict = {}
        self._functions: dict = {}
        self._following: set = set()  # names being judged: a cycle adds nothing

    def model_name(self, key: str) -> Optional[bool]:
        """What is bound or stored under the name: models, or containers of them
        (``models.append(model)`` ... ``for model in models``)."""
        if key in self._following:
            return None
        self._following.add(key)
        try:
            return self._model_name(key)
        finally:
            self._following.discard(key)

    def _model_name(self, key: str) -> Optional[bool]:
        file_model, values = self.file_model, []
        for a in file_model.assignments:
            if not any(model_key(p) == key for t in a.targets for p in bound_paths(t)):
                continue
            if self.local_of_a_module(a):
                continue  # ``model = self.fc(h)`` in a forward: a tensor local to the model's code
            if a.kind not in ("assign", "for") or len(a.targets) != 1 or dotted(a.targets[0]) is None:
                return False  # a tuple unpacking, ``with ... as model``
            values.append(a.value)
        values += [positional(c.node, STORE_METHODS[c.method or ""]) for c in file_model.calls
                   if c.method in STORE_METHODS and c.receiver and model_key(c.receiver) == key]
        if not values:
            values = self.passed_as(key)
        if any(v is None for v in values):
            return False
        return _combined(self.value(v) for v in values)

    def passed_as(self, key: str) -> list:
        """What the file's calls pass for a parameter named ``key`` (``test_step(model=model_1)``);
        None for a call whose argument we cannot map."""
        values = []
        for scope in self.file_model.scopes:
            if key not in scope.params:
                continue
            index = scope.params.index(key)
            for call in self.file_model.callers.get(scope, ()):
                offset = 1 if scope.class_name is not None and call.receiver is not None else 0
                arg = keyword(call.node, key)
                values.append(arg if arg is not None else positional(call.node, index - offset))
        return values

    def local_of_a_module(self, assignment: Assignment) -> bool:
        """A plain name bound in a method of an nn.Module class of the file: a local there."""
        scope = assignment.site.scope
        if scope.is_module or not all(isinstance(t, cst.Name) for t in assignment.targets):
            return False
        return self.file_model.is_module_class(self.file_model.enclosing_class(scope))

    def value(self, expr: Optional[cst.BaseExpression]) -> Optional[bool]:
        """A model, or a container of models: a name, a slice or element of one, a literal list."""
        if isinstance(expr, (cst.Name, cst.Attribute)):
            path = dotted(expr)
            return False if path is None else self.model_name(model_key(path))
        if isinstance(expr, cst.Subscript):
            return self.value(expr.value)
        if isinstance(expr, (cst.List, cst.Tuple)):
            if any(isinstance(el, cst.StarredElement) for el in expr.elements):
                return False
            return _combined(self.value(el.value) for el in expr.elements)
        if isinstance(expr, cst.Call) and dotted(expr.func) == "list" and not expr.args:
            return None  # an empty list: what is stored in it decides
        return self.construction(expr)

    def construction(self, value: Optional[cst.BaseExpression]) -> Optional[bool]:
        """``Net(...)``, ``nn.Sequential(...)``, either followed by ``.to(device)``; or
        ``model.to(device)``, the model of that name."""
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and (
            value.func.attr.value in _SAME_MODEL_METHODS
        ):
            value = value.func.value
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.value(value)
        if not isinstance(value, cst.Call) or any(arg.star for arg in value.args):
            return False  # nn.Sequential(*layers): layers we cannot see
        callee = dotted(value.func)
        qualified = self.names.qualify(callee)
        if qualified in _PARALLEL_WRAPPERS:
            wrapped = positional(value, 0) or keyword(value, "module")
            return wrapped is not None and self.value(wrapped) is not False
        builds = (callee in self.file_model.class_bases or is_torch_nn_layer(qualified)
                  or self.imported_mode_free(callee))
        return builds and all(self.call(c) for c in _calls_in(value))

    def call(self, call: cst.Call, scope: Optional[Scope] = None) -> bool:
        """Does this call, inside a model's construction or methods (``scope``), leave the mode
        irrelevant?"""
        callee = dotted(call.func)
        qualified = self.names.qualify(callee)
        if qualified is not None:
            return torch_call_mode_free(qualified, lambda name: _layer_mode_free(name, call))
        if callee in self.file_model.class_bases:
            return self.mode_free_class(callee)
        if self.imported_mode_free(callee):
            return True
        if isinstance(call.func, cst.Attribute):
            # self.fc(x), out.view(...), super().__init__(); a function of an imported module is unknown.
            return callee is None or callee.split(".", 1)[0] not in self.names.bound_by_import
        if callee in MODE_FREE_BUILTINS:
            return True
        if callee in self.file_model.functions:
            return self.mode_free_function(callee)
        return scope is not None and callee is not None and self.submodule_name(scope, callee)

    def imported_mode_free(self, callee: Optional[str]) -> bool:
        """A class of another module of the project (``Net`` of ``from model import Net``,
        ``model.Net`` of ``import model``) that its summary finds mode-free."""
        head = callee.split(".", 1)[0] if callee is not None else None
        if callee is None or head not in self.names.origins or head in self.file_model.bound_here:
            return False  # not imported, or rebound here: what the name holds is not the import's
        return self.file_model.derived(_imported_mode_free, callee)

    def mode_free_function(self, name: str) -> bool:
        """A function of the file (``create_variable(hidden)``) called from a model's methods."""
        if name not in self._functions:
            self._functions[name] = False  # recursion: not followed
            self._functions[name] = all(
                all(self.call(c.node, scope) for c in scope.calls) and "training" not in identifiers(scope.node)
                for scope in self.file_model.functions[name])
        return self._functions[name]

    def submodule_name(self, scope: Scope, name: str) -> bool:
        """A local name the method binds only to its own submodules or torch layers:
        ``for conv in self.convs``, ``layer = self.layers[i]``, ``mp = nn.MaxPool2d(k)``
        (that construction is judged as one of the method's calls)."""
        bindings = [a for a in scope.assignments if any(p == name for t in a.targets for p in bound_paths(t))]
        return bool(bindings) and all(
            a.kind in ("assign", "for") and a.value is not None
            and names_submodules(_submodule_reading(a.value), self.names.qualify)
            for a in bindings)

    def mode_free_class(self, cls: str) -> bool:
        if cls not in self._classes:
            self._classes[cls] = False  # a class built from itself: not followed
            self._classes[cls] = self._class_uncached(cls)
        return self._classes[cls]

    def _class_uncached(self, cls: str) -> bool:
        for base in self.file_model.class_bases.get(cls, ()):
            if base in self.file_model.class_bases:
                if not self.mode_free_class(base):
                    return False
            elif self.names.qualify(base) != "torch.nn.Module" and not self.imported_mode_free(base):
                return False  # a base from elsewhere may add dropout or read self.training
        for scope in self.file_model.scopes:
            if self.file_model.enclosing_class(scope) != cls:
                continue
            if scope.name in ("train", "eval") and scope.class_name == cls:
                return False  # its own mode switch
            if "training" in identifiers(scope.node):
                return False  # reads self.training
            if not all(self.call(c.node, scope) for c in scope.calls):
                return False
        return True


def _imported_mode_free(file_model: FileModel, callee: str) -> bool:
    """Class ``callee`` of another module of the project, judged by this same definition on the
    model of its own module (``ProjectView.class_fact``)."""
    project, origin = file_model.project, file_model.names.imported_from(callee)
    return project is not None and origin is not None and bool(project.class_fact(*origin, mode_free_class))


def mode_free_class(file_model: FileModel, cls: str) -> bool:
    """Does class ``cls`` of the file surely compute the same in training and eval mode?"""
    return _Checker(file_model).mode_free_class(cls)


def _layer_mode_free(name: str, call: cst.Call) -> bool:
    if any(arg.star for arg in call.args):
        return False

    def argument(word: str, position: int) -> Optional[str]:
        value = keyword(call, word)
        if value is None:
            value = positional(call, position)
        if value is None:
            return None
        return value.value if isinstance(value, (cst.Integer, cst.Float)) else NOT_A_LITERAL

    return layer_mode_free(name, argument)


def _submodule_reading(value: cst.BaseExpression) -> object:
    """``value`` as ``vocab.names_submodules`` reads it."""
    if isinstance(value, cst.Subscript):
        return SUBSCRIPT, _submodule_reading(value.value)
    path = dotted(value)
    if path is not None:
        return path
    if isinstance(value, cst.Call):
        return CALL, dotted(value.func), tuple(_submodule_reading(a.value) for a in value.args)
    return LITERAL if isinstance(value, (cst.Integer, cst.SimpleString)) else None


def _calls_in(node: cst.Call) -> list:
    found = []
    walk(node, lambda n: found.append(n) if type(n) is cst.Call else None, lambda n: None)
    return found
