"""libcst's parse of a long file, in pieces cut between top-level statements.

libcst's parser costs more per line the longer the file, from the first
hundreds of lines on: on dense generated training code about 33 µs a line for
50 lines, 35 for 200, 45 for 1,000, 51 for 4,000 (the stdlib parser grows too,
less). Parsed in pieces of about ``PIECE_LINES`` lines, a file of 200 lines or
more costs what its pieces do (a 1,000-line file 14 % less than whole), and the
pieces join into one ``Module`` whose code is the file's and whose statements
are those of a whole parse: a cut only falls on a line
where a top-level statement (or its first decorator) begins and the one before
has ended, so no piece splits a statement. Comment and blank lines before a
cut end one piece's footer and are handed to the next statement, where a
whole parse puts them. Anything unexpected (pieces that detect a different
indentation or newline, a piece libcst refuses, a piece whose end does not
print as it reads) means one whole parse. Most pieces end plainly enough for the
text alone to say so (``_plainly_ended``); the others' ends are printed and compared.

Every parse here builds its nodes the quicker way ``cst_nodes`` describes
(``parse_source``): unvalidated, their fields set by slot. Nodes built anywhere
else are validated as before.
"""
from __future__ import annotations

import ast
from collections import OrderedDict
from typing import List, Optional, Union

import libcst as cst

from torchlint.cst_nodes import parsing

PIECE_LINES = 100


def parse_source(text: str) -> cst.Module:
    """``cst.parse_module(text)``: the same tree, its nodes not validated one by one (the
    grammar has; see ``cst_nodes``). Raises what libcst raises."""
    with parsing():
        return cst.parse_module(text)


def cut_lines(tree: Optional[ast.Module], source: str, every: Optional[int] = None) -> List[int]:
    """0-based line numbers to cut ``source`` before (empty: parse it whole)."""
    every = every or PIECE_LINES
    if tree is None or "\r" in source or source.count("\n") < 2 * every:
        return []
    lines = source.split("\n")
    # A piece takes its indentation from its first block, and joins only where that is the
    # file's (``_joined``): no cut before a statement whose next block is indented otherwise
    # (notebook cells of two styles), rather than a parse in pieces and then whole.
    indents = _next_block_indents(tree.body, lines)
    cuts, last_cut, previous_end = [], 0, 0
    for statement, indent in zip(tree.body, indents):
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        # the piece's end reads back as written (``_plainly_ended``) without printing it
        if (first - 1 - last_cut >= every and previous_end < first and indent in (None, indents[0])
                and all(map(_ends_plainly, lines[previous_end:first - 1]))):
            cuts.append(first - 1)
            last_cut = first - 1
        previous_end = statement.end_lineno or statement.lineno
    return cuts


def _next_block_indents(body: list, lines: List[str]) -> List[Optional[str]]:
    """For each statement of ``body``, the indentation of the first indented block from it on."""
    found: List[Optional[str]] = []
    following = None
    for statement in reversed(body):
        following = _block_indent(statement, lines) or following
        found.append(following)
    return found[::-1]


def _block_indent(statement: ast.stmt, lines: List[str]) -> Optional[str]:
    """The indentation of ``statement``'s first indented block (None: it has none, ``if a: b``).
    Read off Python's tree: a guess that only saves a parse, ``_joined`` decides."""
    orelse = getattr(statement, "orelse", None)
    clauses = [getattr(statement, "body", None), *(h.body for h in getattr(statement, "handlers", ())),
               *(c.body for c in getattr(statement, "cases", ())), orelse, getattr(statement, "finalbody", None)]
    for block in clauses:
        first = block[0] if isinstance(block, list) and block else None
        if not isinstance(first, ast.stmt):
            continue
        prefix = lines[first.lineno - 1][:first.col_offset]
        if prefix and not prefix.strip():
            return prefix
        if block is orelse and isinstance(first, ast.If):
            return _block_indent(first, lines)  # ``if a: b`` then ``elif c:`` over lines
    return None


# What a module body holds.
_Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


class PieceCache:
    """Parsed pieces kept between parses of texts that change a little at a time (an
    editor's buffer): a piece whose text is unchanged is not parsed again. libcst
    trees are immutable, so a piece is safely part of many parses. Least recently
    used pieces go first once the pieces kept hold more than ``max_lines`` lines
    (a libcst tree takes about 20 KB a line)."""

    def __init__(self, piece_lines: int = 50, max_lines: int = 20_000) -> None:
        self.piece_lines = piece_lines
        self.max_lines = max_lines
        self._pieces: "OrderedDict[str, cst.Module]" = OrderedDict()
        self._lines = 0
        # A piece's first statement takes the comment and blank lines that end the
        # piece before it: the joined statement is kept too, so that an unchanged
        # statement stays the same object (positions.RangeMemo relies on it).
        self._heads: "OrderedDict[tuple, tuple]" = OrderedDict()
        self._ends_as_read: dict = {}  # piece text -> _ends_as_read of its piece (a codegen)

    def joined_head(self, head: _Statement, carried: tuple) -> _Statement:
        key = (id(head), *map(id, carried))
        kept = self._heads.get(key)
        if kept is None:
            # kept with its parts, so no other object can take their ids
            kept = (head.with_changes(leading_lines=(*carried, *head.leading_lines)), head, carried)
            self._heads[key] = kept
            if len(self._heads) > 4 * len(self._pieces) + 16:
                self._heads.popitem(last=False)
        else:
            self._heads.move_to_end(key)
        return kept[0]

    def parse(self, text: str) -> cst.Module:
        piece = self._pieces.get(text)
        if piece is not None:
            self._pieces.move_to_end(text)
            return piece
        piece = parse_source(text)  # a syntax error raises before anything is kept
        self._pieces[text] = piece
        self._lines += text.count("\n") + 1
        while self._lines > self.max_lines and len(self._pieces) > 1:
            old, _ = self._pieces.popitem(last=False)
            self._ends_as_read.pop(old, None)
            self._lines -= old.count("\n") + 1
        return piece

    def ends_as_read(self, piece: cst.Module, text: str) -> bool:
        """``_ends_as_read``, asked once per kept piece: the same text parses to the same piece."""
        if self._pieces.get(text) is not piece:
            return _ends_as_read(piece, text)
        verdict = self._ends_as_read.get(text)
        if verdict is None:
            verdict = self._ends_as_read[text] = _ends_as_read(piece, text)
        return verdict


def parse_module(source: str, cuts: List[int], pieces: Optional[PieceCache] = None) -> cst.Module:
    """``cst.parse_module(source)``, in pieces when ``cuts`` (from ``cut_lines``) says where;
    ``pieces`` keeps them for the next parse of a similar text."""
    parse = pieces.parse if pieces is not None else parse_source
    if not cuts:
        return parse(source)
    lines = source.split("\n")
    bounds = [0, *cuts, len(lines)]
    texts = ["\n".join(lines[a:b]) + ("\n" if b < len(lines) else "") for a, b in zip(bounds, bounds[1:])]
    try:
        return _joined([parse(text) for text in texts], texts, pieces)
    except (cst.ParserSyntaxError, _NotTheSame):
        return parse_source(source)


class _NotTheSame(Exception):
    pass


def _ends_as_read(piece: cst.Module, text: str) -> bool:
    """libcst drops lines at the end of a file in some layouts (a blank line before a
    whitespace-only one): a piece joins others only if its end prints as it reads."""
    if not piece.body:
        return False
    if _plainly_ended(text):
        return True
    tail = "".join(piece.code_for_node(node) for node in (*piece.body[-1:], *piece.footer))
    return text.endswith(tail)


def _plainly_ended(text: str) -> bool:
    """Whether ``text`` (ending in a newline) ends as libcst always reads it back, decided
    on the text without printing the piece: no line continuation anywhere, and after its
    last line of code only empty lines and comments in the first column (the layouts
    where libcst drops a line all have a space, a tab or an indented comment there)."""
    if "\\\n" in text:
        return False
    end = len(text) - 1  # at the final newline
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#"):
            return True  # the last line of code
        if not _ends_plainly(line):
            return False
        end = start - 1
    return False


def _ends_plainly(line: str) -> bool:
    """A line that may follow a piece's last code at its end: empty, or a first-column comment."""
    return not line or line.startswith("#")


def _joined(pieces: List[cst.Module], texts: List[str], cache: Optional[PieceCache] = None) -> cst.Module:
    ends_as_read = cache.ends_as_read if cache is not None else _ends_as_read
    for piece, text in zip(pieces[:-1], texts):
        if not ends_as_read(piece, text):
            raise _NotTheSame()
    first = pieces[0]
    # libcst takes a module's indentation from its first indented block: a piece of
    # top-level simple statements has none (its default is a guess), and no node of it
    # depends on one, so it joins whatever the file's blocks use.
    indent = next((p.default_indent for p in pieces if _holds_blocks(p)), first.default_indent)
    body, carried = list(first.body), first.footer
    for piece in pieces[1:]:
        if (piece.header or not piece.body or (piece.default_indent != indent and _holds_blocks(piece))
                or piece.default_newline != first.default_newline):
            raise _NotTheSame()
        head = piece.body[0]
        if cache is not None:
            body.append(cache.joined_head(head, tuple(carried)))
        else:
            body.append(head.with_changes(leading_lines=(*carried, *head.leading_lines)))
        body.extend(piece.body[1:])
        carried = piece.footer
    last = pieces[-1]
    return first.with_changes(body=tuple(body), footer=carried, default_indent=indent,
                              has_trailing_newline=last.has_trailing_newline)


def _holds_blocks(piece: cst.Module) -> bool:
    """Whether ``piece`` holds an indented block, what libcst reads its indentation off (a
    compound statement on one line, ``if __name__ == "__main__": main()``, holds none)."""
    return any(_opens_block(statement) for statement in piece.body)


def _opens_block(node: cst.CSTNode) -> bool:
    """Whether one of ``node``'s clauses (its body, ``elif``, ``else``, ``except``, ``finally``,
    ``case``) is an indented block: the first of a compound statement's blocks is among them."""
    if isinstance(getattr(node, "body", None), cst.IndentedBlock):
        return True
    clauses = [getattr(node, "orelse", None), getattr(node, "finalbody", None),
               *getattr(node, "handlers", ()), *getattr(node, "cases", ())]
    return any(clause is not None and _opens_block(clause) for clause in clauses)
