"""A read-only walk over a libcst tree, several times faster than ``node.visit``.

libcst's visitor rebuilds every node it passes (``_visit_and_replace_children``
constructs a new dataclass per node, validation included), even for a visitor
that changes nothing; on real files that cost as much as parsing. The model
only reads the tree, so it walks the dataclass fields itself, in source order,
and skips fields that hold only whitespace and punctuation.
"""
from __future__ import annotations

from dataclasses import fields
from typing import Callable, Dict, FrozenSet, Optional, Set, Tuple, Union

import libcst as cst

# Fields whose dataclass order differs from the order they appear in source:
# decorators come first, ``a if cond else b`` starts with ``a``, ``f(k=v)`` with ``k``.
_SOURCE_ORDER: Dict[type, Tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
}
_LAYOUT = frozenset((
    "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "leading_lines",
    "lines_after_decorators", "header", "footer", "comma", "semicolon", "equal", "colon",
    "dot", "asynchronous", "trailing_whitespace", "indent", "operator",
))
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(kind: type) -> Tuple[str, ...]:
    names = _SOURCE_ORDER.get(kind) or tuple(
        f.name for f in fields(kind) if f.name not in _LAYOUT and not f.name.startswith("whitespace")
    )
    _CHILD_FIELDS[kind] = names
    return names


# type -> _NODE, _SEQUENCE or _OTHER: ``isinstance(value, cst.CSTNode)`` goes through
# ABCMeta's ``__instancecheck__``, a fifth of the model's walk; a type's answer never changes.
_NODE, _SEQUENCE, _OTHER = 1, 2, 3  # all true: "or _kind(...)" runs once per new type
_KINDS: Dict[type, int] = {tuple: _SEQUENCE, list: _SEQUENCE}


def _kind(value: Optional[Union[cst.CSTNode, str, cst.MaybeSentinel]]) -> int:
    kind = type(value)
    found = _KINDS.get(kind)
    if found is None:
        found = _KINDS[kind] = _NODE if isinstance(value, cst.CSTNode) else _OTHER
    return found


def walk(node: cst.CSTNode, enter: Callable, leave: Callable) -> None:
    """Call ``enter(n)`` and ``leave(n)`` around every syntax node under ``node``, in source order."""
    enter(node)
    kind = type(node)
    names = _CHILD_FIELDS.get(kind)
    for name in _child_fields(kind) if names is None else names:
        value = getattr(node, name)
        found = _KINDS.get(type(value)) or _kind(value)
        if found == _NODE:
            walk(value, enter, leave)
        elif found == _SEQUENCE:
            for item in value:
                if (_KINDS.get(type(item)) or _kind(item)) == _NODE:
                    walk(item, enter, leave)
    leave(node)


def children(node: cst.CSTNode) -> list:
    """The syntax nodes directly under ``node``, in source order (libcst's ``children``
    without the rebuild, whitespace and punctuation)."""
    kind = type(node)
    out = []
    names = _CHILD_FIELDS.get(kind)
    for name in _child_fields(kind) if names is None else names:
        value = getattr(node, name)
        found = _KINDS.get(type(value)) or _kind(value)
        if found == _NODE:
            out.append(value)
        elif found == _SEQUENCE:
            out.extend(item for item in value if (_KINDS.get(type(item)) or _kind(item)) == _NODE)
    return out


def walk_parented(node: cst.CSTNode, enter: Callable, leave: Callable, parents: dict,
                  quiet: FrozenSet[type], watched: Set[int]) -> None:
    """``walk``, filling ``parents`` (``id(n) -> the node it sits in``) for every node under
    ``node``, and calling ``enter``/``leave`` only around the nodes whose type is not in
    ``quiet`` or whose id is in ``watched`` (which ``enter`` may add to on the way down). The
    model's builder records nothing at most nodes (names, attributes, literals): two calls
    for nothing at each were a fifth of the model's build. A quiet node with nothing under
    it (a name, a number, a string: two in five of the nodes walked on the training corpus)
    gets its parent and no call."""
    barren = _BARREN_QUIET.get(quiet)
    if barren is None:
        barren = _BARREN_QUIET[quiet] = frozenset(kind for kind in quiet if _barren(kind))
    _walk_parented(node, enter, leave, parents, quiet, watched, barren)


def _walk_parented(node: cst.CSTNode, enter: Callable, leave: Callable, parents: dict,
                   quiet: FrozenSet[type], watched: Set[int], barren: FrozenSet[type]) -> None:
    kind = type(node)
    # ``watched and``: most files have no watched node, and the test spares an ``id`` a node
    called = kind not in quiet or (watched and id(node) in watched)
    if called:
        enter(node)
    names = _CHILD_FIELDS.get(kind)
    for name in _child_fields(kind) if names is None else names:
        value = getattr(node, name)
        found = _KINDS.get(type(value)) or _kind(value)
        if found == _NODE:
            parents[id(value)] = node
            if type(value) not in barren or (watched and id(value) in watched):
                _walk_parented(value, enter, leave, parents, quiet, watched, barren)
        elif found == _SEQUENCE:
            for item in value:
                if (_KINDS.get(type(item)) or _kind(item)) == _NODE:
                    parents[id(item)] = node
                    if type(item) not in barren or (watched and id(item) in watched):
                        _walk_parented(item, enter, leave, parents, quiet, watched, barren)
    if called:
        leave(node)


# quiet types -> those of them under which no syntax node can sit
_BARREN_QUIET: Dict[FrozenSet[type], FrozenSet[type]] = {}


def _barren(kind: type) -> bool:
    """No syntax node can sit under a node of ``kind``: its child fields hold text only
    (``Name.value``) or it has none (``Add``, ``Ellipsis``), as the fields' types say."""
    types = {f.name: f.type for f in fields(kind)}
    return all(types[name] is str for name in _CHILD_FIELDS.get(kind) or _child_fields(kind))
