"""Where nodes are: libcst's PositionProvider ranges, for a few nodes of a big module.

PositionProvider runs a position-tracking codegen over the whole module: five
times a plain codegen, and more per line the longer the file. Findings are
few, so only the top-level statements that hold one get it, each as a module
of its own, offset by the line breaks of the plain code before it. The
ranges are the same (tests compare them on every node of the fixtures and
corpus).
"""
from __future__ import annotations

import re
from typing import Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

from torchlint.model.walk import walk

_LINE_BREAK = re.compile(r"\r\n?|\n")  # as PositionProvider counts lines


def node_positions(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> dict:
    """``id(node) -> CodeRange`` (libcst's PositionProvider ranges) for ``nodes`` of ``module``."""
    wanted = {id(node) for node in nodes}
    where = _top_level_statements(module, wanted)
    by_statement: dict = {}
    for node in nodes:
        by_statement.setdefault(where.get(id(node)), []).append(node)
    if None in by_statement:  # a node outside the statements (the module itself)
        found = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return {id(node): found[node] for node in nodes if node in found}
    positions, line, done = {}, _line_breaks(module, module.header), 0
    for index in sorted(by_statement):
        line += _line_breaks(module, module.body[done:index])
        done = index
        alone = module.with_changes(header=(), body=(module.body[index],), footer=())
        ranges = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
        for node in by_statement[index]:
            if node in ranges:
                positions[id(node)] = _shifted(ranges[node], line)
    return positions


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
