"""Finding where a node stands in the tree: the nodes between a root and a node under it.

The model's walk records each node's parent (``FileModel.parents``); given that map, the
chain is climbed, a step per level. Without it (a tree the model did not build) the root's
nodes are searched, once per question.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple, Union

import libcst as cst

from torchlint.model.walk import children

# The comprehensions: each runs its element once per item of its ``for``.
COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def suspends_here(node: cst.CSTNode) -> bool:
    """Is ``node`` a point where its function suspends: a ``yield``, an ``await``, or an
    ``async for``/``async with``/async comprehension, which await implicitly?"""
    return isinstance(node, (cst.Yield, cst.Await)) or (
        isinstance(node, (cst.For, cst.With, cst.CompFor)) and node.asynchronous is not None)


def ancestors(root: cst.CSTNode, target: cst.CSTNode, parents: Optional[Dict[int, cst.CSTNode]] = None) -> Optional[list]:
    """The nodes from ``root`` down to ``target``'s parent, or None if it is not under ``root``;
    ``parents``: ``id(node) -> parent`` of a tree holding both (``FileModel.parents``)."""
    if target is root:
        return []
    if parents is not None:
        chain, node = [], parents.get(id(target))
        while node is not None:
            chain.append(node)
            if node is root:
                chain.reverse()
                return chain
            node = parents.get(id(node))
        return None
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


def statement_in_block(root: cst.CSTNode, target: cst.CSTNode, parents: Optional[Dict[int, cst.CSTNode]] = None
                       ) -> Optional[Tuple[Union[cst.Module, cst.IndentedBlock], int]]:
    """``(block, index)``: the Module or IndentedBlock holding the statement around
    ``target`` and that statement's index in ``block.body``; None inside a one-line suite."""
    chain = ancestors(root, target, parents)
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
