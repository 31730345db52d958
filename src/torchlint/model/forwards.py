"""Is a call a forward pass, and of which model? Is it a loss?

A forward runs a model: ``model(x)``, ``model.module.forward(x)``, ``self(x)`` in a module
class, a name the file binds to a model (``roles.py``) or one named like a model. Not a
class being built, a torch function, a function of this file or of an imported module, nor
a library wrapper that runs its own inference (``YOLO(path)``, ``pipeline(...)``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional, Set

import libcst as cst

from torchlint.model import vocab
from torchlint.model.expr import dotted

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite

# Methods of models that are not forward passes (or run under no_grad themselves).
_NOT_FORWARD = frozenset(
    "parameters named_parameters buffers named_buffers children named_children modules "
    "named_modules state_dict load_state_dict eval train to cuda cpu half float double "
    "bfloat16 zero_grad apply requires_grad_ generate predict predict_proba sample "
    "save save_pretrained from_pretrained freeze unfreeze backward step item detach "
    "numel size summary compile add_module extra_repr type share_memory".split()
)
_NOT_FORWARD_PREFIXES = ("get_", "set_", "init", "reset", "save", "load", "num_", "register",
                         "generate", "predict", "sample", "_")
_MODULE_BASE_HINTS = ("Module", "Model", "Net", "Lightning", "Layer", "Block")


def wrapper_instances(file_model: FileModel) -> frozenset:
    """Names bound to library wrappers that run their own inference (``YOLO(path)``,
    ``pipeline(...)``): calling one is not a raw forward pass."""
    found: Set[str] = set()
    for a in file_model.assignments:
        if a.kind == "assign" and isinstance(a.value, cst.Call):
            if vocab.last_name(dotted(a.value.func) or "") in vocab.INFERENCE_WRAPPERS:
                found.update(p for p in map(dotted, a.targets) if p)
    return frozenset(found)


def is_module_class(file_model: FileModel, cls: Optional[str]) -> bool:
    bases = file_model.class_bases.get(cls or "", ())
    return any(hint in b for b in bases for hint in _MODULE_BASE_HINTS)


def forward_target(file_model: FileModel, call: CallSite) -> Optional[str]:
    """For a forward pass, the model it runs (``model`` for ``model.module.forward(x)``)."""
    callee = call.callee
    if callee is None:
        return None
    callee = vocab.called_module(callee)
    if callee == "self":
        return "self" if is_module_class(file_model, file_model.enclosing_class(call.scope)) else None
    last = vocab.last_name(callee)
    if not last or file_model.names.qualify(callee) is not None:
        return None  # a torch API function
    if last[0].isupper() and (callee in file_model.class_bases or not file_model.roles.bound_variable(callee)):
        return None  # a class being built; ``G_AB = Generator()`` is a variable, though
    if "." in callee and callee.split(".", 1)[0] in file_model.names.bound_by_import:
        return None  # models.resnet18(weights=...): a function of an imported module
    if callee in file_model.wrapper_instances:
        return None
    return callee


def is_forward(file_model: FileModel, call: CallSite, models: Iterable[str] = ()) -> bool:
    target = file_model.forward_target(call)
    if target is None or (target != "self" and file_model.resolve(call) is not None):
        return False  # knn_classifier(...) defined in this file is a function, not a model
    if target == "self" or target in models or target in file_model.roles.models:
        return True
    return vocab.is_model_name(vocab.last_name(target))


def is_submodule_forward(file_model: FileModel, call: CallSite) -> bool:
    """``model.trunk(x)``, ``self.encoder.features(x)``: a part of a model run forward.

    Only taint uses this; TL101 keeps to direct model calls, since methods
    like ``generate`` run under no_grad themselves.
    """
    method, receiver = call.method, call.receiver
    if not method or receiver is None or method[0].isupper() or method in _NOT_FORWARD:
        return False
    if method.startswith(_NOT_FORWARD_PREFIXES) or file_model.names.qualify(receiver) is not None:
        return False
    holder = vocab.unwrapped_module(receiver)
    if holder == "self":
        return is_module_class(file_model, file_model.enclosing_class(call.scope))
    return holder in file_model.roles.models or vocab.is_model_name(vocab.last_name(holder))


def is_loss_call(file_model: FileModel, call: CallSite) -> bool:
    callee = call.callee
    if callee is None:
        return False
    last = vocab.last_name(callee)
    if last[:1].isupper():
        return False
    q = file_model.names.qualify(callee)
    if q is not None:
        return q.startswith("torch.nn.functional.") and last in vocab.LOSS_FUNCTIONS
    roles = file_model.roles
    return callee in roles.criteria or vocab.is_loss_name(last) or roles.is_project_loss_function(callee)
