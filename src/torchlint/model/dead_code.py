"""Branches that can never run: the one place torchlint decides what is dead code.

Only a literal constant makes a branch dead (``if False:``, ``if 0:``, ``if None:``,
``while False:``, ``if not True:``; the ``elif``/``else`` of ``if True:`` and ``if 1:``).
A name never does: ``DEBUG`` may be set elsewhere, ``__debug__`` is true unless Python
runs with ``-O``, and ``TYPE_CHECKING`` blocks matter to names even though they never run.
The model's builder records no facts from these suites (only their nodes' parents), so
what the model answers is about live code alone; the engine drops findings in them and
fixes that would edit them, which covers a rule that walks a live statement's subtree
itself and meets a dead suite there. No rule needs to ask.
"""
from __future__ import annotations

import ast
from typing import Optional, Tuple

import libcst as cst

_CONSTANT_NAMES = {"True": True, "False": False, "None": False}


def constant_truth(test: cst.BaseExpression) -> Optional[bool]:
    """The truth of ``test`` when it is a literal constant (or ``not`` of one), else None."""
    if isinstance(test, cst.Name):
        return _CONSTANT_NAMES.get(test.value)
    if isinstance(test, cst.Integer):
        try:
            return bool(ast.literal_eval(test.value))
        except (ValueError, SyntaxError):
            return None
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = constant_truth(test.expression)
        return None if inner is None else not inner
    return None


def dead_suites(node: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
    """The parts of an ``if`` or ``while`` statement that never run: its body when the
    test is a false constant; for ``if``, its whole ``elif``/``else`` chain when the test
    is a true constant. The ``else`` of ``while False:`` runs, so it stays live."""
    if isinstance(node, cst.If):
        truth = constant_truth(node.test)
        if truth is False:
            return (node.body,)
        if truth is True and node.orelse is not None:
            return (node.orelse,)
    elif isinstance(node, cst.While) and constant_truth(node.test) is False:
        return (node.body,)
    return ()
