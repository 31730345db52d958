"""Small readers of libcst expressions shared by the model and the rules."""
from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from torchlint.model.walk import children, walk


def dotted(node: Optional[cst.CSTNode]) -> Optional[str]:
    """``self.model.module`` for a Name/Attribute chain, else None."""
    # ``type() is``: libcst's node classes are ABCs without subclasses, and ``isinstance``
    # against them costs several times more on the model's hottest reader.
    if type(node) is cst.Name:
        return node.value
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def root_name(node: cst.CSTNode) -> Optional[str]:
    """The innermost Name of an attribute/subscript/call chain: ``a`` in ``a.b[0].c()``."""
    while True:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            node = node.value
        elif isinstance(node, cst.Call):
            node = node.func
        else:
            return None


def keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    seen = 0
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            if seen == index:
                return arg.value
            seen += 1
    return None


def literal_bool(node: Optional[cst.BaseExpression]) -> Optional[bool]:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return node.value not in ("0",)
    return None


def literal_number(node: Optional[cst.BaseExpression]) -> Optional[float]:
    """The value of a numeric literal (``1e-6``, ``0.001``, ``1``); None for anything else."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    return None


def is_constant(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float))


def identifiers(node: cst.CSTNode) -> Iterator[str]:
    """Every Name and attribute name under ``node`` (cheap; no metadata)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Name):
            yield cur.value
        elif isinstance(cur, cst.Attribute):
            yield cur.attr.value
            stack.append(cur.value)
        else:
            stack.extend(children(cur))


def referenced_paths(node: cst.CSTNode) -> Iterator[str]:
    """Dotted paths read in an expression: ``a``, ``self.acc`` in ``(self.acc + a).sum()``."""
    stack = [node]
    while stack:
        cur = stack.pop()
        path = dotted(cur)
        if path is not None:
            yield path
            continue
        if type(cur) is cst.Attribute:  # not ``isinstance``: see ``dotted``
            stack.append(cur.value)
        else:
            stack.extend(children(cur))


# Methods that hand out a container's own elements: ``d.values()`` holds what ``d`` holds.
_ELEMENT_VIEWS = frozenset(("values", "items"))


def read_paths(node: cst.CSTNode) -> Iterator[str]:
    """``referenced_paths`` plus dicts read through their views: ``d`` in ``sum(d.values())``.

    Other methods' receivers are left out: ``loss.item()`` reads ``loss`` but holds none of its graph.
    """
    yield from referenced_paths(node)
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute) and cur.func.attr.value in _ELEMENT_VIEWS:
            receiver = dotted(cur.func.value)
            if receiver is not None:
                yield receiver
        stack.extend(children(cur))


def bound_values(target: cst.BaseExpression,
           value: Optional[cst.BaseExpression]) -> Iterator[Tuple[str, Optional[cst.BaseExpression]]]:
    """(path, value bound) for a target: ``a, b = Net(), Net()`` pairs element-wise;
    other unpacking binds values we cannot see (None)."""
    path = dotted(target)
    if path is not None:
        yield path, value
        return
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
            and len(target.elements) == len(value.elements) \
            and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
        for t, v in zip(target.elements, value.elements):
            yield from bound_values(t.value, v.value)
        return
    for bound in bound_paths(target):
        yield bound, None


def bound_paths(target: cst.BaseExpression) -> Iterator[str]:
    """Names an assignment target rebinds: ``a``, ``self.b`` in ``a, self.b = ...`` (not ``d[k]``)."""
    # ``type() is``, as in ``dotted``: most targets are names, which ``isinstance`` against
    # three ABCs would turn down in Python
    if type(target) is cst.Tuple or type(target) is cst.List:
        for el in target.elements:
            yield from bound_paths(el.value)
    elif type(target) is cst.StarredElement:
        yield from bound_paths(target.value)
    else:
        path = dotted(target)
        if path is not None:
            yield path


def name_uses(node: cst.CSTNode, name: Optional[str]) -> Tuple[List[cst.Name], Optional[bool]]:
    """The reads of ``name`` (of every name, for None) in ``node`` (in nested functions and
    lambdas too: they may keep it), and whether ``node`` binds it by assignment or loop target;
    None where some other binding (``del``, ``global``, an import, ``with ... as``, a
    comprehension's or walrus target, a nested ``def`` or lambda) may be of it."""
    reads: List[cst.Name] = []
    binds: List[bool] = []
    skipped: Set[int] = set()
    opaque = False

    # Dispatched on the exact type: libcst's node classes have no subclasses, and ``isinstance``
    # against them (ABCs) was most of this walk's time.
    def enter(n: cst.CSTNode) -> None:
        nonlocal opaque
        if type(n) is cst.Name:
            if (name is None or n.value == name) and id(n) not in skipped:
                reads.append(n)
        elif type(n) is cst.AssignTarget or type(n) is cst.For or (type(n) is cst.AnnAssign and n.value is not None):
            targets = _target_names(n.target)
            skipped.update(map(id, targets))
            binds.extend(t.value == name for t in targets)
        elif type(n) is cst.Attribute:
            skipped.add(id(n.attr))  # ``x.prob``: an attribute, not the name
        elif type(n) is cst.Arg:
            if n.keyword is not None:
                skipped.add(id(n.keyword))
        elif type(n) in _OPAQUE_BINDINGS:
            opaque = True

    walk(node, enter, lambda n: None)
    return reads, None if opaque else any(binds)


_OPAQUE_BINDINGS = frozenset((cst.AsName, cst.CompFor, cst.NamedExpr, cst.Global, cst.Nonlocal, cst.Del,
                              cst.ImportAlias, cst.FunctionDef, cst.ClassDef, cst.Lambda))


def _target_names(target: cst.BaseExpression) -> List[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []
