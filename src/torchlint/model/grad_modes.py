"""The grad mode at a statement (``FileModel.grad_at``).

A site knows the mode its own ``with torch.no_grad():`` blocks and decorators set; past that,
the scope's last ``set_grad_enabled`` switch before it, and past that the mode the function
runs in: the one every caller of the module gives it (a ``torch.no_grad()(evaluate)`` wrapper
counts), a framework's hook (Lightning runs ``validation_step`` under no_grad), the mode where
the ``def`` stands, or, for module-level code, grad on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

from torchlint.model import vocab
from torchlint.model.grad import GradMode
from torchlint.model.records import Scope, Site, Unsettled

if TYPE_CHECKING:
    from torchlint.model import FileModel


class InCallCycle(Unsettled):
    """What ``scope_grad`` answers for a function whose mode is still being worked out: a call
    from inside a call cycle, which tells nothing of the mode (no ``GradMode`` is it). A nested
    function that takes its mode from an enclosing one still being worked out (a callback
    that calls it back) gets it too, and, being unsettled, it is not kept: kept, it made the
    callback's mode depend on which function was asked about first."""


_CYCLE = InCallCycle()


def grad_at(file_model: FileModel, site: Site) -> Union[GradMode, InCallCycle]:
    mode = set_here(site)
    return mode if mode is not None else scope_grad(file_model, site.scope)


def set_here(site: Site) -> Optional[GradMode]:
    """The mode the site's own function sets where it stands (its ``with`` blocks, then its last
    ``set_grad_enabled`` switch before it), or None where that is the mode the function runs in:
    what a call of the function from another module can rely on, whoever calls it."""
    if site.grad is not None:
        return site.grad
    for order, mode in reversed(site.scope.grad_switches):
        if order < site.order:
            return mode
    return None


def scope_grad(file_model: FileModel, scope: Scope) -> Union[GradMode, InCallCycle]:
    """The mode a function runs in; ``InCallCycle`` only while some function's mode is being
    worked out, never once every request has returned (the memo keeps no unsettled answer)."""
    # In a call cycle, a call from inside the cycle adds nothing.
    return file_model.derived(_compute_scope_grad, scope, while_computing=_CYCLE)


def _compute_scope_grad(file_model: FileModel, scope: Scope) -> Union[GradMode, InCallCycle]:
    if scope.is_module:
        return GradMode.GRAD
    if scope.decorator_grad is not None:
        return scope.decorator_grad
    if scope.class_name is not None and scope.name in vocab.GRAD_FREE_HOOKS:
        if file_model.derived(_framework_class, scope.class_name):
            return GradMode.NO_GRAD
    callers = file_model.callers.get(scope, [])
    wrapped = file_model.wrapped_calls.get(scope, [])
    if callers or wrapped:
        modes = ({grad_at(file_model, c.site) for c in callers} | set(wrapped)) - {_CYCLE}
        if not modes:  # only called from itself (or its own callees): callers say nothing
            pass
        elif modes == {GradMode.NO_GRAD}:
            return GradMode.NO_GRAD
        elif GradMode.GRAD not in modes:
            return GradMode.MAYBE
        else:
            return GradMode.GRAD
    if scope.def_grad is not None:
        return scope.def_grad
    if scope.parent is not None and not scope.parent.is_module:
        return scope_grad(file_model, scope.parent)
    return GradMode.GRAD


def _framework_class(file_model: FileModel, cls: str) -> bool:
    """Might a framework (Lightning, mmengine, a Trainer) call this class's hooks under
    no_grad? Not when the bases it reaches are torch's own: a plain ``nn.Module`` with a
    ``predict_step`` is called by the file's own code, in whatever grad mode it chooses."""
    seen, todo, torch_base = set(), [cls], False
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        for base in file_model.class_bases.get(current, ()):
            if base in file_model.class_bases:
                todo.append(base)
            elif not (file_model.names.qualify(base) or "").startswith("torch.nn."):
                return True
            else:
                torch_base = True
    return not torch_base  # a mixin with no base: its host class may be a framework's
