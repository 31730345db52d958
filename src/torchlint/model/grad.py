"""Grad mode: what ``with``-items and decorators do to autograd recording."""
from __future__ import annotations

import enum
from typing import Optional

import libcst as cst

from torchlint.model.expr import dotted, identifiers, keyword, literal_bool, positional


class GradMode(enum.Enum):
    GRAD = "grad"  # recording (the default, or enable_grad)
    NO_GRAD = "no_grad"  # no_grad, inference_mode, set_grad_enabled(False)
    MAYBE = "maybe"  # set_grad_enabled(expr), or a context we cannot read


# Project wrappers of grad mode: ultralytics' smart_inference_mode, monai's
# eval_mode, transformers' get_inference_context. We cannot read them, so MAYBE.
_GRAD_HINTS = ("no_grad", "inference", "grad_enabled", "enable_grad", "eval_mode")


def classify(expr: cst.BaseExpression) -> Optional[GradMode]:
    """Grad mode a ``with`` item or decorator sets; None when it leaves it alone.

    Any ``no_grad``, not only torch's: projects re-export it (``from .utils
    import no_grad``) and treating it as no-grad only ever silences.
    """
    call = expr if isinstance(expr, cst.Call) else None
    path = dotted(call.func if call is not None else expr)
    name = path.rsplit(".", 1)[-1] if path else None
    if name == "no_grad":
        return GradMode.NO_GRAD
    if name == "enable_grad":
        return GradMode.GRAD
    if name == "inference_mode":
        mode = None
        if call is not None:
            mode = keyword(call, "mode") or positional(call, 0)
        return None if literal_bool(mode) is False else GradMode.NO_GRAD
    if name == "set_grad_enabled":
        flag = literal_bool(positional(call, 0) or keyword(call, "mode")) if call else None
        if flag is None:
            return GradMode.MAYBE
        return GradMode.GRAD if flag else GradMode.NO_GRAD
    if any(hint in ident for ident in identifiers(expr) for hint in _GRAD_HINTS):
        return GradMode.MAYBE
    return None


def classify_statement_call(call: cst.Call) -> Optional[GradMode]:
    """``torch.set_grad_enabled(False)`` as a bare statement switches mode from there on."""
    path = dotted(call.func)
    if path is None or not path.endswith("set_grad_enabled"):
        return None
    return classify(call)
