"""Finding where a node stands in the tree, for the rare rule that needs parents.

The model keeps no parent pointers (building them costs a walk of every file);
a fix is rare, so a rule that must rewrite the statement or block around a node
searches for it once, here.
"""
from __future__ import annotations

from typing import Optional, Tuple, Union

import libcst as cst

from torchlint.model.walk import children


def ancestors(root: cst.CSTNode, target: cst.CSTNode) -> Optional[list]:
    """The nodes from ``root`` down to ``target``'s parent, or None if it is not under ``root``."""
    stack = [(root, 0)]
    path: list = []
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        if node is target:
            return path
        path.append(node)
        stack.extend((child, depth + 1) for child in reversed(children(node)))
    return None


def statement_in_block(root: cst.CSTNode,
                       target: cst.CSTNode) -> Optional[Tuple[Union[cst.Module, cst.IndentedBlock], int]]:
    """``(block, index)``: the Module or IndentedBlock holding the statement around
    ``target`` and that statement's index in ``block.body``; None inside a one-line suite."""
    chain = ancestors(root, target)
    if not chain:
        return None
    nodes = chain + [target]
    for depth in range(len(nodes) - 2, -1, -1):
        block = nodes[depth]
        if isinstance(block, cst.SimpleStatementSuite):
            return None
        if isinstance(block, (cst.Module, cst.IndentedBlock)):
            stmt = nodes[depth + 1]
            return block, next(i for i, s in enumerate(block.body) if s is stmt)
    return None


def contains(root: cst.CSTNode, kinds: tuple) -> bool:
    """Is a node of one of ``kinds`` anywhere under ``root`` (nested functions included)?"""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        stack.extend(children(node))
    return False
