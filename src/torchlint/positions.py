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
from typing import List, Optional, Sequence

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


def node_positions(module: cst.Module, nodes: Sequence[cst.CSTNode],
                   starts: Optional[List[int]] = None) -> dict:
    """``id(node) -> CodeRange`` (libcst's PositionProvider ranges) for ``nodes`` of ``module``;
    ``starts``: ``statement_starts`` of the same source, when the caller has Python's tree."""
    wanted = {id(node) for node in nodes}
    where = _top_level_statements(module, wanted)
    by_statement: dict = {}
    for node in nodes:
        by_statement.setdefault(where.get(id(node)), []).append(node)
    if None in by_statement:  # a node outside the statements (the module itself)
        found = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
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
        alone = module.with_changes(header=(), body=(module.body[index],), footer=())
        ranges = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
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


def _ignore(node) -> None:
    pass


def _line_breaks(module: cst.Module, nodes) -> int:
    return sum(len(_LINE_BREAK.findall(module.code_for_node(node))) for node in nodes)


def _shifted(span: CodeRange, lines: int) -> CodeRange:
    return CodeRange(CodePosition(span.start.line + lines, span.start.column),
                     CodePosition(span.end.line + lines, span.end.column))
