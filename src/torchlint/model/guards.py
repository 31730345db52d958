"""Which calls run only under a condition: inside an ``if`` (or a conditional expression).

Debugging switches are written as ``if args.debug: ...``; a rule about a
debugging aid left on asks this before reporting. ``if __name__ ==
"__main__":`` guards nothing: it is how a script's main code is written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from torchlint.model.expr import identifiers
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model import FileModel


def _is_main_guard(test: cst.BaseExpression) -> bool:
    return "__name__" in set(identifiers(test))


def conditional_calls(file_model: FileModel) -> frozenset:
    """ids of the Call nodes that run only when some ``if`` test holds."""
    return file_model.derived(_conditional_calls)


def _conditional_calls(file_model: FileModel) -> frozenset:
    found, depth = set(), [0]

    def enter(node: cst.CSTNode) -> None:
        if isinstance(node, cst.If) and not _is_main_guard(node.test) or isinstance(node, cst.IfExp):
            depth[0] += 1
        elif isinstance(node, cst.Call) and depth[0]:
            found.add(id(node))

    def leave(node: cst.CSTNode) -> None:
        if isinstance(node, cst.If) and not _is_main_guard(node.test) or isinstance(node, cst.IfExp):
            depth[0] -= 1

    walk(file_model.module, enter, leave)
    return frozenset(found)
