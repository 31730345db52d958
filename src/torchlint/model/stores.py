"""The ways a scope keeps a value: into a container, an accumulator, or a dict under a key.

``losses.append(loss)``, ``log[split].append(l)``, ``total += loss``,
``total = total + loss``, ``self.stats["loss"] += l``, ``preds[i] = out``.
Whether what is kept carries a graph, and whether the container outlives what
made the value, are the asking rule's or fact's questions (a training loop's
iteration for TL301, a module's forward call for ``module_state.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, NamedTuple, Optional

import libcst as cst

from torchlint.model.expr import dotted, is_constant, positional
from torchlint.model.vocab import STORE_METHODS

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Scope, Site


class Store(NamedTuple):
    """One statement or call that keeps ``value`` in ``container``.

    ``kind`` is ``store`` (``append``, ``extend``, ``insert``), ``accumulate`` (``+=``,
    ``total = total + x``) or ``keyed`` (``d[k] = x`` under a key that is not a constant).
    """

    node: cst.CSTNode  # the call or the assignment statement
    target: cst.BaseExpression  # what is written as written: ``self.losses["cls"]``, ``log[split]``
    container: str  # the named container that keeps it: ``self.losses``, ``log``
    value: cst.BaseExpression
    site: Site
    kind: str

    @property
    def order(self) -> int:
        return self.site.order


def stores(scope: Scope) -> Iterator[Store]:
    """Each way ``scope`` keeps a value, calls first, then assignments."""
    for call in scope.calls:
        index = STORE_METHODS.get(call.method or "")
        if index is None or not isinstance(call.node.func, cst.Attribute):
            continue
        receiver = call.receiver or container_of(call.node.func)
        value = positional(call.node, index)
        if value is not None and receiver is not None:
            yield Store(call.node, call.node.func.value, receiver, value, call.site, "store")
    for a in scope.assignments:
        if a.value is None:
            continue
        if a.kind == "aug" and a.op == "AddAssign":
            path = dotted(a.targets[0]) or container_of(a.targets[0])
            if path:
                yield Store(a.node, a.targets[0], path, a.value, a.site, "accumulate")
        elif a.kind == "assign" and len(a.targets) == 1:
            target = a.targets[0]
            path = dotted(target)
            if path and self_sum(a, path):
                yield Store(a.node, target, path, a.value, a.site, "accumulate")
            elif isinstance(target, cst.Subscript) and (container := dotted(target.value)):
                keys = [s.slice.value for s in target.slice if isinstance(s.slice, cst.Index)]
                if keys and not all(is_constant(k) for k in keys):
                    yield Store(a.node, target, container, a.value, a.site, "keyed")


def self_sum(a: Assignment, container: str) -> bool:
    """``total = total + x`` (or ``x + total``): the accumulating spelling of ``total += x``."""
    return (
        a.kind == "assign" and len(a.targets) == 1 and dotted(a.targets[0]) == container
        and isinstance(a.value, cst.BinaryOperation) and isinstance(a.value.operator, cst.Add)
        and container in (dotted(a.value.left), dotted(a.value.right))
    )


def container_of(node: cst.BaseExpression) -> Optional[str]:
    """``log`` of ``log[split].append``'s receiver, ``self.stats`` of ``self.stats[k] += l``:
    the named container that keeps what goes into one of its entries."""
    if isinstance(node, cst.Attribute):
        node = node.value
    if not isinstance(node, cst.Subscript):
        return None
    while isinstance(node, cst.Subscript):
        node = node.value
    return dotted(node)
