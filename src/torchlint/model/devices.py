"""Does this file put its tensors on a CUDA device?

Read from ``x.cuda()`` and ``x.to(d)`` where ``d`` is a string naming CUDA
(``"cuda"``, ``f"cuda:{rank}"``) or a name the file binds to one
(``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``),
or a ``device=`` argument naming CUDA (``main(device="cuda")``).
A device the file cannot see (``args.device``) does not count.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Set

import libcst as cst

from torchlint.model.expr import dotted, keyword, positional
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.model import FileModel


def mentions_cuda(expr: cst.CSTNode) -> bool:
    """A string naming CUDA anywhere in ``expr``."""
    found = []

    def enter(node: cst.CSTNode) -> None:
        if isinstance(node, (cst.SimpleString, cst.FormattedStringText)) and "cuda" in (
            node.value if isinstance(node, cst.FormattedStringText) else node.value.lower()
        ):
            found.append(node)

    walk(expr, enter, lambda node: None)
    return bool(found)


def _cuda_names(file_model: FileModel) -> set:
    """Dotted names (and their last parts) bound anywhere in the file to a CUDA device."""
    names: Set[str] = set()
    for a in file_model.assignments:
        if a.kind in ("assign", "with") and a.value is not None and mentions_cuda(a.value):
            for target in a.targets:
                path = dotted(target)
                if path is not None:
                    names.update((path, path.rsplit(".", 1)[-1]))
    return names


def moves_to_cuda(file_model: FileModel) -> bool:
    return file_model.derived(_moves_to_cuda)


def _moves_to_cuda(file_model: FileModel) -> bool:
    names = _LazyNames(file_model)
    return any(_puts_on_cuda(file_model, call, names) for call in file_model.calls)


class _LazyNames:
    """The CUDA-bound names, read only when a ``.to(name)`` asks."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.names: Optional[Set[str]] = None

    def __contains__(self, path: str) -> bool:
        if self.names is None:
            self.names = _cuda_names(self.file_model)
        return path in self.names or path.rsplit(".", 1)[-1] in self.names


def _puts_on_cuda(file_model: FileModel, call: CallSite, cuda_names: _LazyNames) -> bool:
    """``x.cuda()``, ``x.to("cuda")``, ``x.to(device)`` with a CUDA ``device``, ``f(device="cuda")``."""
    device = keyword(call.node, "device")
    if device is not None and mentions_cuda(device):
        return True
    if not isinstance(call.node.func, cst.Attribute) or file_model.names.qualify(call.receiver) is not None:
        return False  # a plain function, or torch's own API (torch.cuda.is_available())
    if call.method == "cuda":
        return True
    if call.method != "to":
        return False
    target = positional(call.node, 0) or device
    if target is None:
        return False
    path = dotted(target)
    return mentions_cuda(target) or (path is not None and path in cuda_names)
