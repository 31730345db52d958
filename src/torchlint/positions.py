"""Where nodes are: libcst's PositionProvider ranges, for a few nodes of a big module.

PositionProvider runs a position-tracking codegen over the whole module: five
times a plain codegen, and more per line the longer the file. Findings are
few, so only the top-level statements that hold one get it, each as a module
of its own, offset by the lines before it. Those lines are read off Python's
own tree when the caller has one (``statement_starts``: free, it was parsed
anyway), else counted in the plain code of the statements before. The ranges
are the same either way (tests compare them on every node of the fixtures and
corpus).
"""
from __future__ import annotations

import ast
import re
from collections import OrderedDict
from typing import List, Mapping, Optional, Sequence, cast

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from torchlint.model.walk import walk

_LINE_BREAK = re.compile(r"\r\n?|\n")  # as PositionProvider counts lines


def statement_starts(tree: ast.Module, source: str) -> Optional[List[int]]:
    """The first line of each statement of ``tree.body`` (its first decorator's, for a
    decorated one), for ``node_positions``; None where a statement's first line could
    be other than libcst's: a backslash continuation just before it."""
    lines = _LINE_BREAK.split(source)
    starts = []
    for statement in tree.body:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        if first >= 2 and lines[first - 2].endswith("\\"):
            return None
        starts.append(first)
    return starts


class RangeMemo:
    """Ranges within top-level statements, kept between lints of texts that change a
    little at a time: with ``cst_parse.PieceCache``, an unchanged statement is the same
    object in the next parse, and its nodes' ranges within it are the same. At most
    ``size`` statements, least recently used first out."""

    def __init__(self, size: int = 500) -> None:
        self.size = size
        self._kept: "OrderedDict[tuple, tuple]" = OrderedDict()

    def ranges(self, module: cst.Module, statement: cst.CSTNode) -> Mapping[cst.CSTNode, CodeRange]:
        # the module's defaults print what the statement leaves unsaid (indents, newlines,
        # and whether the file's last line ends with one)
        last = statement is module.body[-1]
        key = (id(statement), module.default_indent, module.default_newline, last and module.has_trailing_newline)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            return kept[1]
        found = _statement_ranges(module, statement)
        # kept with its ranges, the statement stays alive: no other object takes its id
        self._kept[key] = (statement, found)
        if len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return found


def _statement_ranges(module: cst.Module, statement: cst.CSTNode) -> Mapping[cst.CSTNode, CodeRange]:
    alone = module.with_changes(header=(), body=(statement,), footer=())
    return _ranges(alone)


def _ranges(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """PositionProvider's ranges of every node of ``module``. Asked through
    ``MetadataWrapper.resolve``, libcst also runs its batched visitors, none here, over the
    whole tree, which rebuilds every node and costs as much as the position codegen itself
    (half of the positioning time of a dense training file). The provider is run alone, as
    the wrapper runs a provider that is not batchable; the wrapper is the way back should a
    libcst release change that hook."""
    provider = PositionProvider()
    try:
        provider._gen_impl(module)
    except AttributeError:  # pragma: no cover - a libcst without the provider hook
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return cast("Mapping[cst.CSTNode, CodeRange]", provider._computed)  # the provider's ranges, as resolve returns them


def node_positions(module: cst.Module, nodes: Sequence[cst.CSTNode],
                   starts: Optional[List[int]] = None, memo: Optional[RangeMemo] = None,
                   parents: Optional[dict] = None) -> dict:
    """``id(node) -> CodeRange`` (libcst's PositionProvider ranges) for ``nodes`` of ``module``;
    ``starts``: ``statement_starts`` of the same source, when the caller has Python's tree;
    ``memo``: ranges kept from earlier calls; ``parents``: ``id(node) -> parent`` of the
    module's nodes (the model's), which spares a walk."""
    wanted = {id(node) for node in nodes}
    if parents is not None:
        where = _statements_above(module, nodes, parents)
    else:
        where = _top_level_statements(module, wanted)
    by_statement: dict = {}
    for node in nodes:
        by_statement.setdefault(where.get(id(node)), []).append(node)
    if None in by_statement:  # a node outside the statements (the module itself)
        found = _ranges(module)
        return {id(node): found[node] for node in nodes if node in found}
    offsets = _offsets_from_starts(module, starts) if starts is not None else None
    positions, line, done = {}, 0, 0
    if offsets is None:
        line = _line_breaks(module, module.header)
    for index in sorted(by_statement):
        if offsets is None:
            line += _line_breaks(module, module.body[done:index])
            done = index
        else:
            line = offsets[index]
        statement = module.body[index]
        ranges = memo.ranges(module, statement) if memo is not None else _statement_ranges(module, statement)
        for node in by_statement[index]:
            if node in ranges:
                positions[id(node)] = _shifted(ranges[node], line)
    return positions


def _offsets_from_starts(module: cst.Module, starts: List[int]) -> Optional[List[int]]:
    """The lines before each statement of ``module.body`` (its leading comment and blank
    lines included), from Python's statement starts; None when the two trees do not
    pair up. A simple statement line holds one Python statement per ``;`` part."""
    offsets, taken = [], 0
    for statement in module.body:
        if taken >= len(starts):
            return None
        offsets.append(starts[taken] - 1 - len(statement.leading_lines))
        taken += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return offsets if taken == len(starts) else None


def _top_level_statements(module: cst.Module, wanted: set) -> dict:
    """``id(node) -> index`` of the statement of ``module.body`` under which it sits."""
    where: dict = {}

    def enter(node):
        if id(node) in wanted:
            where[id(node)] = index

    for index, statement in enumerate(module.body):
        walk(statement, enter, _ignore)
        if len(where) == len(wanted):
            break
    return where


def _statements_above(module: cst.Module, nodes: Sequence[cst.CSTNode], parents: dict) -> dict:
    """``_top_level_statements`` by climbing from each node to the module."""
    index_of = {id(statement): index for index, statement in enumerate(module.body)}
    where: dict = {}
    for node in nodes:
        climbing: Optional[cst.CSTNode] = node
        while id(climbing) not in index_of and climbing is not None:
            climbing = parents.get(id(climbing))
        if climbing is not None:
            where[id(node)] = index_of[id(climbing)]
    return where


def _ignore(node) -> None:
    pass


def _line_breaks(module: cst.Module, nodes) -> int:
    return sum(len(_LINE_BREAK.findall(module.code_for_node(node))) for node in nodes)


def _shifted(span: CodeRange, lines: int) -> CodeRange:
    return CodeRange(CodePosition(span.start.line + lines, span.start.column),
                     CodePosition(span.end.line + lines, span.end.column))
