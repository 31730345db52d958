"""Expressions that surely hold a tensor, and those that surely hold a model parameter.

TL506 asks this before calling ``x.require_grad = False`` a typo: on a tensor
the assignment silently makes a new Python attribute, while on a config
object or a module's own flag (``self.require_grad = require_grad``) the name
is the author's choice. Evidence comes from how the value was made, never
from its name alone: a loop over ``model.parameters()``, a module's
``.weight``/``.bias``, ``nn.Parameter(...)`` or a tensor factory, a forward
pass or a loss, a torch operation on a tensor. Unknown is not a tensor.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, List, Optional

import libcst as cst

from torchlint.model.expr import dotted, keyword, literal_bool, positional
from torchlint.model.leaves import (
    freezes, is_leaf_factory, loop_members, method_chain, produced_by_graph_call, reaching_value,
)
from torchlint.model.tensors import TensorNames
from torchlint.model.vocab import LEAF_WRAPPERS, PARAMETER_ITERATORS, SHAPE_METHODS
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model import FileModel, Scope

# Methods after which a detached tensor is still a leaf (``.detach().clone().to(device)``).
_AFTER_DETACH = SHAPE_METHODS | frozenset(("clone", "detach"))
# A module's own parameters, read as attributes: ``model.fc.weight``.
PARAMETER_ATTRS = frozenset(("weight", "bias"))


def _switched(keyword_name: str, index: int, *attrs: str) -> dict:
    return {attr: (keyword_name, index) for attr in attrs}


_ALWAYS = None
# torch.nn layers whose ``weight``/``bias`` are trainable parameters as built, with the
# argument (keyword, position) that, given a literal False, builds the layer without them.
# InstanceNorm (affine=False by default) and ``Embedding.from_pretrained`` (frozen by
# default) are not here.
LAYER_PARAMETERS = {
    "Linear": {"weight": _ALWAYS, **_switched("bias", 2, "bias")},
    "Bilinear": {"weight": _ALWAYS, **_switched("bias", 3, "bias")},
    **{conv: {"weight": _ALWAYS, **_switched("bias", 7, "bias")} for conv in (
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")},
    "Embedding": {"weight": _ALWAYS}, "EmbeddingBag": {"weight": _ALWAYS}, "PReLU": {"weight": _ALWAYS},
    "LayerNorm": _switched("elementwise_affine", 2, "weight", "bias"),
    **{norm: _switched("affine", 3, "weight", "bias") for norm in (
        "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm")},
}


def _calls_parameter_iterator(expr: cst.BaseExpression) -> Optional[str]:
    """``named_parameters``/``parameters`` when ``expr`` calls one (``chain(a.parameters(),
    b.parameters())``, ``list(model.parameters())[:-2]``), else None."""
    found: List[str] = []

    def enter(node: cst.CSTNode) -> None:
        if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value in PARAMETER_ITERATORS):
            found.append(node.func.attr.value)

    walk(expr, enter, lambda node: None)
    if not found:
        return None
    return "named_parameters" if "named_parameters" in found else "parameters"


def _loop_parameter(loop_node: cst.For, iterated: Optional[cst.BaseExpression], name: str) -> bool:
    """Does ``for ... in iterated`` bind ``name`` to one parameter at a time?
    ``for p in m.parameters()``, ``for n, p in m.named_parameters()``,
    ``for i, p in enumerate(m.parameters())``."""
    kind = _calls_parameter_iterator(iterated) if iterated is not None else None
    target = loop_node.target
    if kind is None:
        return False
    if isinstance(target, cst.Name):
        return kind == "parameters" and target.value == name
    if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
        last = target.elements[1].value
        enumerated = isinstance(iterated, cst.Call) and dotted(iterated.func) == "enumerate"
        return (kind == "named_parameters" or enumerated) and isinstance(last, cst.Name) and last.value == name
    return False


def is_parameter(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, order: int) -> bool:
    """Surely a leaf parameter of a model: a loop variable over ``parameters()``, a
    ``.weight``/``.bias``, an element of ``list(model.parameters())``, or a name or
    attribute bound to ``nn.Parameter(...)``/``Variable(...)``."""
    if isinstance(expr, cst.Attribute) and expr.attr.value in PARAMETER_ATTRS:
        return True
    if isinstance(expr, cst.Subscript):  # ``list(model.parameters())[0]``, ``params[-1]``
        followed = _followed(file_model, scope, expr.value, order)  # not None: ``expr.value`` is not
        return followed is not None and _calls_parameter_iterator(followed) is not None
    path = dotted(expr)
    if path is None:
        return False
    if "." in path:  # ``self.w``: every binding in the file makes a leaf
        bindings = [a for a in file_model.assignments if any(dotted(t) == path for t in a.targets)]
        return bool(bindings) and all(a.kind == "assign" and _wraps_parameter(file_model, a.value) for a in bindings)
    reaching = reaching_value(file_model, scope, path, order)
    if reaching is None:
        return False
    assignment, value = reaching
    if assignment.kind == "for" and isinstance(assignment.node, cst.For):  # a "for" binding is a For's
        if _all_members(file_model, scope, path, order, is_parameter):  # ``for p in (w, b)``
            return True
        iterated = _followed(file_model, scope, assignment.value, order)
        return _loop_parameter(assignment.node, iterated, path)
    return assignment.kind == "assign" and (
        _wraps_parameter(file_model, value)
        or (isinstance(value, cst.Attribute) and value.attr.value in PARAMETER_ATTRS)
    )


def _all_members(file_model: FileModel, scope: Scope, path: str, order: int,
                 holds: Callable[[FileModel, Scope, cst.BaseExpression, int], bool]) -> bool:
    """Is ``path`` a loop variable over a literal tuple of names (``for p in (w, b)``), each
    of which ``holds`` where the loop starts?"""
    found = loop_members(file_model, scope, path, order)
    return found is not None and all(holds(file_model, scope, member, found[0]) for member in found[1])


def _wraps_parameter(file_model: FileModel, value: Optional[cst.BaseExpression]) -> bool:
    """``nn.Parameter(w)``, ``Variable(x)``: a floating leaf made to be trained."""
    base, methods = method_chain(value)
    return (not methods and isinstance(base, cst.Call)
            and (dotted(base.func) or "").rsplit(".", 1)[-1] in LEAF_WRAPPERS)


def _followed(file_model: FileModel, scope: Scope, iterated: Optional[cst.BaseExpression], order: int) -> Optional[cst.BaseExpression]:
    """``params`` of ``for p in params`` replaced by the value it was bound to, once."""
    path = dotted(iterated)
    if path is not None:
        reaching = reaching_value(file_model, scope, path, order)
        if reaching is not None and reaching[0].kind == "assign":
            return reaching[1]
    return iterated


def is_leaf(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, order: int) -> bool:
    """Surely a leaf tensor, whose ``requires_grad`` can be set: a parameter, or a name
    bound to a tensor factory or to a detached copy (``x.detach().clone()``)."""
    if is_parameter(file_model, scope, expr, order):
        return True
    path = dotted(expr)
    reaching = reaching_value(file_model, scope, path, order) if path is not None and "." not in path else None
    if reaching is not None and reaching[0].kind == "for":
        assert path is not None  # bound, so a path
        return _all_members(file_model, scope, path, order, is_leaf)
    if reaching is None or reaching[0].kind != "assign":
        return False
    value = reaching[1]
    if is_leaf_factory(file_model, value):
        return True
    _, methods = method_chain(value)
    # Whatever follows ``detach()`` (a copy, a move, a reshape) records nothing: still a leaf.
    return "detach" in methods and all(m in _AFTER_DETACH for m in methods[methods.index("detach") + 1:])


def is_tensor(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, order: int) -> bool:
    """Surely a tensor: a parameter, or a name bound to a tensor factory, a forward pass,
    a loss, a torch operation on a tensor (or a method of one), or a function argument
    the function uses as a tensor."""
    if is_parameter(file_model, scope, expr, order):
        return True
    path = dotted(expr)
    if path is None or "." in path:
        return False
    reaching = reaching_value(file_model, scope, path, order)
    if reaching is None:  # a function's own argument, not rebound before here
        return not scope.is_module and path in file_model.derived(_tensor_names, scope).params
    if reaching[0].kind == "for":
        return _all_members(file_model, scope, path, order, is_tensor)
    if reaching[0].kind != "assign":
        return False
    value = reaching[1]
    if is_leaf_factory(file_model, value) or produced_by_graph_call(file_model, value):
        return True
    names = file_model.derived(_tensor_names, scope)
    return names.is_tensor(value, names.known_at(reaching[0].order))


def _tensor_names(file_model: FileModel, scope: Scope) -> TensorNames:
    return TensorNames(file_model, scope, skip_params=1 if scope.class_name else 0)


def layer_parameter(file_model: FileModel, scope: Scope, path: str, order: int) -> bool:
    """Is ``path`` (``self.fc.weight``, ``emb.weight``, ``model.fc.weight``, ``model.scale``) a
    trainable parameter of a model built in this file? Its owner, the longest part of ``path``
    that is bound, holds a torch.nn layer (``self.fc = nn.Linear(4, 2)``: every binding of
    ``self.fc`` in the file builds one; a name bound to one in ``scope`` before ``order``), a
    model class of the file whose ``__init__`` binds the rest of the path to such a layer or to
    an ``nn.Parameter`` (``model = Net()``), or a torchvision classifier (``resnet18().fc.weight``).
    ``nn.Linear(4, 2, bias=False).bias`` and ``bn.running_mean`` are no parameters."""
    parts = path.split(".")
    if len(parts) < 2 or parts[-1] in _NOT_PARAMETERS:
        return False
    if any(a.kind != "aug" and dotted(t) == path for a in file_model.assignments for t in a.targets):
        return False  # ``self.emb.weight = nn.Parameter(t, requires_grad=False)``; ``+=`` binds the same
    for cut in range(len(parts) - 1, 0, -1):  # ``model.fc = nn.Linear(...)`` replaces the built one
        values = _owner_values(file_model, scope, ".".join(parts[:cut]), order)
        if values is not None:
            return bool(values) and all(_holds_parameter(file_model, value, parts[cut:]) for value in values)
    return False


# Tensors a module holds that are never its trainable parameters.
_NOT_PARAMETERS = frozenset(("data", "grad", "running_mean", "running_var", "num_batches_tracked"))


def _owner_values(file_model: FileModel, scope: Scope, owner: str,
                  order: int) -> Optional[List[Optional[cst.BaseExpression]]]:
    """What ``owner`` may hold: the values of every binding of an attribute path in the file
    (the same spelling is the same object far more often than not), or the binding of a name
    that reaches ``order`` in ``scope``; None where nothing binds it. A binding that is no plain
    assignment (a loop, ``+=``) gives None in the list: unknown."""
    if "." in owner:
        bindings = [a for a in file_model.assignments if any(dotted(t) == owner for t in a.targets)]
        return [a.value if a.kind == "assign" else None for a in bindings] or None
    reaching = reaching_value(file_model, scope, owner, order)
    if reaching is None:
        return None
    return [reaching[1] if reaching[0].kind == "assign" else None]


# Module methods that hand back the module itself: ``Net().to(device)`` is still the ``Net``.
# Not ``requires_grad_``: ``Net().requires_grad_(False)`` holds no trainable parameter.
_RETURNS_ITSELF = frozenset("to cuda cpu float double half bfloat16 train eval".split())
# The torchvision model families whose ``.weight``/``.bias`` are all parameters as built: not
# ``detection`` (FrozenBatchNorm2d keeps them as buffers), ``quantization`` (packed), nor
# segmentation, video and optical flow, left out until someone reads them.
_TORCHVISION_CLASSIFIERS = "torchvision.models."


def _holds_parameter(file_model: FileModel, value: Optional[cst.BaseExpression], attrs: List[str]) -> bool:
    """Does the model ``value`` builds hold a trainable parameter at ``attrs`` (``["fc",
    "weight"]``) from its own ``__init__``?"""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value in _RETURNS_ITSELF:
        value = value.func.value
    if not isinstance(value, cst.Call):
        return False
    callee = dotted(value.func) or ""
    if callee in file_model.roles.model_classes:
        return _class_holds_parameter(file_model, callee, attrs)
    if len(attrs) == 1:
        return _builds_layer_with(file_model, value, attrs[0])
    qualified = file_model.names.qualify_any(callee) or ""
    factory = qualified[len(_TORCHVISION_CLASSIFIERS):] if qualified.startswith(_TORCHVISION_CLASSIFIERS) else ""
    return factory[:1].islower() and "." not in factory and attrs[-1] in PARAMETER_ATTRS


def _class_holds_parameter(file_model: FileModel, cls: str, attrs: List[str]) -> bool:
    """``self.<attrs[0]>`` as every method of ``cls`` (or of a base of the file) binds it: an
    ``nn.Parameter`` when ``attrs`` is that one name, else a model holding the rest. Not when
    the class freezes it (``self.fc.requires_grad_(False)``, a loop over its parameters)."""
    classes = _with_file_bases(file_model, cls)
    own = "self." + attrs[0]
    values = [a.value if a.kind == "assign" else None for a in file_model.assignments
              if a.site.scope.class_name in classes and any(dotted(t) == own for t in a.targets)]
    if not values or _class_freezes(file_model, classes, "self." + ".".join(attrs)):
        return False
    if len(attrs) == 1:
        return all(_trainable_parameter(value) for value in values)
    return all(_holds_parameter(file_model, value, attrs[1:]) for value in values)


def _with_file_bases(file_model: FileModel, cls: str) -> set:
    found, todo = set(), [cls]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(b for b in file_model.class_bases.get(current, ()) if b in file_model.class_bases)
    return found


def _class_freezes(file_model: FileModel, classes: set, path: str) -> bool:
    """Might a method of ``classes`` turn ``requires_grad`` off for ``path`` (``self.fc.weight``),
    for a part of it or for what holds it (``self.requires_grad_(False)``)?"""
    return any(where.class_name in classes and (frozen is None or frozen == path
                                                or path.startswith(frozen + ".") or frozen.startswith(path + "."))
               for where, _, frozen in freezes(file_model))


def _trainable_parameter(value: Optional[cst.BaseExpression]) -> bool:
    """``nn.Parameter(t)``, not ``nn.Parameter(t, requires_grad=False)``."""
    if not isinstance(value, cst.Call) or (dotted(value.func) or "").rsplit(".", 1)[-1] != "Parameter":
        return False
    return literal_bool(keyword(value, "requires_grad") or positional(value, 1)) is not False


def _builds_layer_with(file_model: FileModel, value: Optional[cst.BaseExpression], attr: str) -> bool:
    if not isinstance(value, cst.Call):
        return False
    qualified = file_model.names.qualify(dotted(value.func)) or ""
    layer = qualified[len("torch.nn."):] if qualified.startswith("torch.nn.") else None
    params = LAYER_PARAMETERS.get(layer or "")
    if params is None or attr not in params:
        return False
    if literal_bool(keyword(value, "_freeze")) is True:
        return False  # ``nn.Embedding(n, d, _freeze=True)``
    switch = params[attr]
    if switch is _ALWAYS:
        return True
    name, index = switch
    return literal_bool(keyword(value, name) or positional(value, index)) is not False
