"""What a call does to gradients and optimizers: a backward, ``autograd.grad``, an optimizer
built, stepped or cleared. Told from the call alone and the file's names (an optimizer is a
name the file binds to one, or one named like one)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Set, Tuple

import libcst as cst

from torchlint.model import vocab
from torchlint.model.expr import dotted, keyword, positional
from torchlint.text_gate import BACKWARD_METHODS

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Assignment, CallSite, Scope

_CLEAR_WORDS = ("zero_grad", "clear_grad", "cleargrads", "reset_grad", "zero_gradients")


def differentiated(call: CallSite) -> Optional[cst.BaseExpression]:
    """The tensor a backward call differentiates: ``loss`` of ``loss.backward()``,
    ``outputs`` of ``autograd.grad(outputs, inputs)``, ``loss`` of ``self.manual_backward(loss)``."""
    if call.method == "backward" and isinstance(call.node.func, cst.Attribute):
        return call.node.func.value
    return positional(call.node, 0) or keyword(call.node, "outputs") or keyword(call.node, "tensors")


def is_backward(file_model: FileModel, call: CallSite) -> bool:
    if call.method in BACKWARD_METHODS:
        return True
    return file_model.qualify(call) == "torch.autograd.backward"


def is_autograd_grad(file_model: FileModel, call: CallSite) -> bool:
    q = file_model.qualify(call)
    return q in ("torch.autograd.grad", "torch.autograd.functional.vjp") or (
        call.callee is not None and call.callee.endswith("autograd.grad")
    )


def is_differentiation(file_model: FileModel, call: CallSite) -> bool:
    """A backward or an ``autograd.grad``: a call that differentiates through a graph."""
    return is_backward(file_model, call) or is_autograd_grad(file_model, call)


def backwards_in(file_model: FileModel, scope: Scope) -> Tuple[CallSite, ...]:
    """The scope's backward calls (``is_backward``), in order: asked of the same scope by
    many rules and facts (and again by ``known_grad_scope`` through callers), kept once."""
    return tuple(c for c in scope.calls if is_backward(file_model, c))


def differentiations_in(file_model: FileModel, scope: Scope) -> Tuple[CallSite, ...]:
    """The scope's backward and ``autograd.grad`` calls, in order."""
    return tuple(c for c in scope.calls if is_differentiation(file_model, c))


def is_gradient_call(file_model: FileModel, call: CallSite) -> bool:
    """``autograd.grad`` and the ``torch.autograd.functional`` helpers (jacobian, hessian,
    vjp, ...): they return gradients, which carry a graph only with ``create_graph=True``."""
    return is_autograd_grad(file_model, call) or (file_model.qualify(call) or "").startswith(
        "torch.autograd.functional.")


def computes_gradients(file_model: FileModel, call: CallSite) -> bool:
    return is_differentiation(file_model, call) or call.method in (
        "requires_grad_", "enable_grad", "retain_grad", "register_hook"
    )


def optimizer_names(file_model: FileModel) -> frozenset:
    """Dotted names assigned an optimizer instance anywhere in the file."""
    found: Set[str] = set()
    for scope in file_model.scopes:
        for a in scope.assignments:
            if a.kind != "assign" or not isinstance(a.value, cst.Call):
                continue
            if builds_optimizer(file_model, dotted(a.value.func)):
                found.update(p for p in map(dotted, a.targets) if p)
    return frozenset(found)


def builds_optimizer(file_model: FileModel, callee: Optional[str]) -> bool:
    """Does calling ``callee`` build an optimizer (torch.optim's, or a known library's)?"""
    if callee is None:
        return False
    qualified = file_model.names.qualify(callee) or ""
    last = vocab.last_name(callee)
    return ((qualified.startswith("torch.optim.") and "lr_scheduler" not in qualified)
            or last in vocab.OPTIMIZER_CLASSES or last.endswith("Optimizer"))


def is_optimizer(file_model: FileModel, path: Optional[str]) -> bool:
    if path is None:
        return False
    return path in file_model.optimizer_names or vocab.is_optimizer_name(vocab.last_name(path))


def stepped_optimizer(file_model: FileModel, call: CallSite) -> Optional[str]:
    """The optimizer an ``opt.step()`` or ``scaler.step(opt)`` call steps."""
    if call.method != "step" or call.receiver is None:
        return None
    if is_optimizer(file_model, call.receiver):
        return call.receiver
    if "scaler" in call.receiver.lower():
        target = positional(call.node, 0)
        return dotted(target) if target is not None else None
    return None


def is_training_call(file_model: FileModel, call: CallSite) -> bool:
    """A backward or an optimizer step: a call that trains."""
    return is_backward(file_model, call) or stepped_optimizer(file_model, call) is not None


def needs_autograd(file_model: FileModel, call: CallSite) -> bool:
    """A call that computes gradients (``computes_gradients``) or steps an optimizer: code around
    it wants the graph autograd records, so no_grad there would break it."""
    return computes_gradients(file_model, call) or stepped_optimizer(file_model, call) is not None


def is_closure_step(call: CallSite) -> bool:
    """``optimizer.step(closure)``: the closure runs zero_grad and backward itself."""
    return bool(call.node.args) and "scaler" not in (call.receiver or "").lower()


def clears_grad(file_model: FileModel, call: CallSite) -> bool:
    method = call.method or ""
    if any(word in method.lower() for word in _CLEAR_WORDS):
        return True
    recv = call.receiver or ""
    return method.endswith("_") and (recv.endswith(".grad") or recv.endswith(".grad.data"))


def clears_grad_by_assignment(a: Assignment) -> bool:
    """``p.grad = None`` or ``del p.grad``."""
    return a.kind in ("assign", "del") and any(
        isinstance(t, cst.Attribute) and t.attr.value == "grad" for t in a.targets
    )
