"""Code that writes into ``.grad`` itself: it needs the gradient tensors to exist before ``backward()``.

A parameter server adding workers' gradients (``p.grad += g``), hand-written gradient
injection (``p.grad.copy_(g)``) or accumulation into ``.grad`` all read and write a gradient
that ``zero_grad(set_to_none=True)`` would have freed: for them the zeros of
``set_to_none=False`` are the point (TL602 keeps quiet there).
"""
from __future__ import annotations

import libcst as cst

from torchlint.model import FileModel

# In-place tensor methods that add into or overwrite a gradient (not zero_/mul_/div_, which
# clear or scale one that backward() produced).
_WRITES = frozenset(("add_", "copy_", "addcmul_", "addcdiv_", "sub_", "set_"))


def _is_grad(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"


def writes_into_gradients(file_model: FileModel) -> bool:
    """Does the file add into or copy into a ``.grad`` (``p.grad += g``, ``p.grad.add_(g)``)?"""
    return file_model.derived(_writes_into_gradients)


def _writes_into_gradients(file_model: FileModel) -> bool:
    if any(a.kind == "aug" and any(_is_grad(t) for t in a.targets) for a in file_model.assignments):
        return True
    return any(call.method in _WRITES and isinstance(call.node.func, cst.Attribute)
               and _is_grad(call.node.func.value) for call in file_model.calls)
