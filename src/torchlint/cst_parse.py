"""libcst's parse of a long file, in pieces cut between top-level statements.

libcst's parser costs more per line the longer the file: about 60 µs a line
for 1,000 lines, 100 to 140 µs for 50,000 (the stdlib parser grows too, less).
Parsed in pieces of about ``PIECE_LINES`` lines, a long file costs what its
pieces do, and the pieces join into one ``Module`` whose code is the file's
and whose statements are those of a whole parse: a cut only falls on a line
where a top-level statement (or its first decorator) begins and the one before
has ended, so no piece splits a statement. Comment and blank lines before a
cut end one piece's footer and are handed to the next statement, where a
whole parse puts them. Anything unexpected (pieces that detect a different
indentation or newline, a piece libcst refuses, a piece whose end does not
print as it reads) means one whole parse.
"""
from __future__ import annotations

import ast
from typing import List, Optional

import libcst as cst

PIECE_LINES = 1000


def cut_lines(tree: Optional[ast.Module], source: str, every: Optional[int] = None) -> List[int]:
    """0-based line numbers to cut ``source`` before (empty: parse it whole)."""
    every = every or PIECE_LINES
    if tree is None or "\r" in source or source.count("\n") < 2 * every:
        return []
    cuts, last_cut, previous_end = [], 0, 0
    for statement in tree.body:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        if first - 1 - last_cut >= every and previous_end < first:
            cuts.append(first - 1)
            last_cut = first - 1
        previous_end = statement.end_lineno or statement.lineno
    return cuts


def parse_module(source: str, cuts: List[int]) -> cst.Module:
    """``cst.parse_module(source)``, in pieces when ``cuts`` (from ``cut_lines``) says where."""
    if not cuts:
        return cst.parse_module(source)
    lines = source.split("\n")
    bounds = [0, *cuts, len(lines)]
    texts = ["\n".join(lines[a:b]) + ("\n" if b < len(lines) else "") for a, b in zip(bounds, bounds[1:])]
    try:
        return _joined([cst.parse_module(text) for text in texts], texts)
    except (cst.ParserSyntaxError, _NotTheSame):
        return cst.parse_module(source)


class _NotTheSame(Exception):
    pass


def _joined(pieces: List[cst.Module], texts: List[str]) -> cst.Module:
    for piece, text in zip(pieces[:-1], texts):
        # libcst drops lines at the end of a file in some layouts (a blank line
        # before a whitespace-only one): a piece's end must print as it reads.
        tail = "".join(piece.code_for_node(node) for node in (*piece.body[-1:], *piece.footer))
        if not text.endswith(tail) or not piece.body:
            raise _NotTheSame()
    first = pieces[0]
    body, carried = list(first.body), first.footer
    for piece in pieces[1:]:
        if (piece.header or not piece.body or piece.default_indent != first.default_indent
                or piece.default_newline != first.default_newline):
            raise _NotTheSame()
        head = piece.body[0]
        body.append(head.with_changes(leading_lines=(*carried, *head.leading_lines)))
        body.extend(piece.body[1:])
        carried = piece.footer
    last = pieces[-1]
    return first.with_changes(body=tuple(body), footer=carried,
                              has_trailing_newline=last.has_trailing_newline)
