"""Where nodes are: libcst's PositionProvider ranges, for a few nodes of a big module.

PositionProvider runs a position-tracking codegen over the whole module: five
times a plain codegen, and more per line the longer the file. Findings are
few, so only the statements that hold one get it, each as a module of its
own, offset by the lines before it. Most findings sit in a simple statement
line (a call, an assignment), often deep in a long function or loop: that line
alone is generated, under its block's indentation. A finding elsewhere (a
compound statement's header, a decorator, parameters) takes its top-level
statement. The lines before are read off Python's own tree when the caller
has one (``statement_starts``: free, it was parsed anyway); without it, only
top-level statements are generated, offset by the lines counted in the plain
code of the statements before. The ranges are the same either way (tests
compare them on every node of the fixtures and corpus).
"""
from __future__ import annotations

import ast
import re
from collections import OrderedDict
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

try:  # private to libcst: a release that moves it leaves positions to its own provider (``_ranges``)
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover
    CodegenState = object  # type: ignore[misc, assignment]

from torchlint.model.walk import walk

_LINE_BREAK = re.compile(r"\r\n?|\n")  # as PositionProvider counts lines
_CONTINUED = re.compile(r"\\(?=[\r\n])")  # a backslash that continues its line
# A node's range, as PositionProvider gives it: (start line, start column, end line, end column).
Span = Tuple[int, int, int, int]


class StatementStarts:
    """Where Python's statements begin, for ``node_positions``. ``top``: the first line of
    each top-level statement (its first decorator's, for a decorated one). ``lines``: the
    line of every statement in source order, a compound one before those it holds (the
    order of libcst's tree too), or None where libcst's lines may differ from Python's;
    ``first``: where each top-level statement sits in ``lines``."""

    __slots__ = ("top", "lines", "first")

    def __init__(self, top: List[int], lines: Optional[List[int]] = None, first: Sequence[int] = ()) -> None:
        self.top, self.lines, self.first = top, lines, first


def statement_starts(tree: ast.Module, source: str) -> Optional[StatementStarts]:
    """Python's statement lines of ``source`` (``tree`` is its parse), for ``node_positions``;
    None where a top-level statement's first line could be other than libcst's: a
    backslash continuation just before it."""
    lines = _LINE_BREAK.split(source)
    top = []
    for statement in tree.body:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        if first >= 2 and lines[first - 2].endswith("\\"):
            return None
        top.append(first)
    if _drops_a_line(source):
        # Within a top-level statement such a file keeps libcst's lines: its nested lines
        # take their top-level statement's ranges.
        return StatementStarts(top)
    every: List[int] = []
    first_of = []
    for statement in tree.body:
        first_of.append(len(every))
        _in_source_order((statement,), every)
    return StatementStarts(top, every, first_of)


def _drops_a_line(source: str) -> bool:
    """Whether a line of ``source`` is only a backslash continuation: libcst leaves it out
    of its tree, whose lines after it are then one fewer than the file's (and Python's)."""
    for found in _CONTINUED.finditer(source):
        at = found.start()
        while at > 0 and source[at - 1] in " \t\f":
            at -= 1
        if at == 0 or source[at - 1] in "\r\n":
            return True
    return False


def _held_fields() -> Dict[type, Tuple[str, ...]]:
    # except clauses and match cases are no statements: what they hold is in their body
    by_name = {"If": ("body", "orelse"), "For": ("body", "orelse"), "AsyncFor": ("body", "orelse"),
               "While": ("body", "orelse"), "With": ("body",), "AsyncWith": ("body",),
               "FunctionDef": ("body",), "AsyncFunctionDef": ("body",), "ClassDef": ("body",),
               "Try": ("body", "handlers", "orelse", "finalbody"),
               "TryStar": ("body", "handlers", "orelse", "finalbody"), "Match": ("cases",)}
    return {getattr(ast, name): held for name, held in by_name.items() if hasattr(ast, name)}


_HELD = _held_fields()
_CLAUSES = ("handlers", "cases")


def _in_source_order(statements: Sequence[ast.stmt], lines: List[int]) -> None:
    for statement in statements:
        lines.append(statement.lineno)
        for name in _HELD.get(type(statement), ()):
            if name in _CLAUSES:
                for clause in getattr(statement, name):
                    _in_source_order(clause.body, lines)
            else:
                _in_source_order(getattr(statement, name), lines)


class RangeMemo:
    """Ranges within statements, kept between lints of texts that change a little at a
    time: with ``cst_parse.PieceCache``, an unchanged statement is the same object in the
    next parse, and its nodes' ranges within it are the same. At most ``size``
    statements, least recently used first out."""

    def __init__(self, size: int = 500) -> None:
        self.size = size
        self._kept: "OrderedDict[tuple, tuple]" = OrderedDict()

    def ranges(self, module: cst.Module, statement: cst.CSTNode,
               indent: Optional[str] = None) -> Mapping[int, Span]:
        """``_statement_ranges``, or ``_line_ranges`` with an ``indent``."""
        # the module's defaults print what the statement leaves unsaid (indents, newlines,
        # and whether the file's last line ends with one); a nested line's columns count
        # its block's indentation
        last = statement is module.body[-1]
        key = (id(statement), indent, module.default_indent, module.default_newline,
               last and module.has_trailing_newline)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            return kept[1]
        found = _statement_ranges(module, statement) if indent is None else _line_ranges(module, statement, indent)
        # kept with its ranges, the statement stays alive: no other object takes its id
        self._kept[key] = (statement, found)
        if len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return found


def _statement_ranges(module: cst.Module, statement: cst.CSTNode) -> Mapping[int, Span]:
    alone = module.with_changes(header=(), body=(statement,), footer=())
    spans = _ranges(alone)
    del spans[id(alone)]  # gone with this call: its id may be another node's later
    return spans


# A nested line is generated as the one statement of this block, so that everything
# libcst indents on its lines (its start, indented comments before it, continuation
# lines inside brackets) is indented as in the file: those columns then need no mending.
_HOLDER = cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=(cst.SimpleStatementLine(()),)))
_HOLDER_LINES = 1  # the line of ``if _:``, above the statement


def _line_ranges(module: cst.Module, line: cst.CSTNode, indent: str) -> Mapping[int, Span]:
    block = _HOLDER.body.with_changes(body=(line,), indent=indent)
    holder = _HOLDER.with_changes(body=block)
    spans = _statement_ranges(module, holder)
    del spans[id(holder)], spans[id(block)]
    return spans


def _ranges(module: cst.Module) -> Dict[int, Span]:
    """``id(node) -> span`` of every node of ``module``, as libcst's PositionProvider ranges
    them. Its codegen state keeps a ``CodeRange`` of two ``CodePosition``s per node, keys
    them by the node (a Python ``__hash__`` per lookup) and marks syntactic positions with a
    generator context manager: half of the positioning time of a dense training file.
    ``_SpanState`` does the same bookkeeping with tuples and ids (not libcst's metadata
    wrapper either, which also runs its batched visitors over the whole tree); a libcst
    whose codegen hooks differ takes the provider itself, through the wrapper."""
    try:
        state = _SpanState(module.default_indent, module.default_newline)
        module._codegen(state)
    except (AttributeError, TypeError):  # pragma: no cover - a libcst with other codegen hooks
        whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return {id(node): (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in whole.items()}
    return state.spans


class _SpanState(CodegenState):
    """libcst's ``PositionProvidingCodegenState``, keeping spans by id."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.line, self.column = 1, 0
        self.spans: Dict[int, Span] = {}
        self._starts: List[Tuple[int, int]] = []

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _LINE_BREAK.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self._starts.pop()
        # a syntactic position, recorded on the way, is the one kept
        if id(node) not in self.spans:
            self.spans[id(node)] = (line, column, self.line, self.column)

    # libcst declares a generator context manager; its codegen only enters and leaves it
    def record_syntactic_position(  # type: ignore[override]
            self, node: cst.CSTNode, *, start_node: Optional[cst.CSTNode] = None,
            end_node: Optional[cst.CSTNode] = None) -> "_Syntactic":
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    """The context in which libcst generates a node's syntactic part: on leaving, the
    node's span, its start or end taken from ``start_node``/``end_node`` when given."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state: _SpanState, node: cst.CSTNode, start_node: Optional[cst.CSTNode],
                 end_node: Optional[cst.CSTNode]) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        self.line, self.column = state.line, state.column

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        if exc_type is not None:
            return  # a Ctrl-C mid-codegen passes as itself (libcst's ``finally`` hid it in a KeyError)
        state = self.state
        spans = state.spans
        if self.start_node is None:
            line, column = self.line, self.column
        else:
            line, column = spans[id(self.start_node)][:2]
        if self.end_node is None:
            end_line, end_column = state.line, state.column
        else:
            end_line, end_column = spans[id(self.end_node)][2:]
        spans[id(self.node)] = (line, column, end_line, end_column)


def node_positions(module: cst.Module, nodes: Sequence[cst.CSTNode],
                   starts: Optional[StatementStarts] = None, memo: Optional[RangeMemo] = None,
                   parents: Optional[dict] = None) -> dict:
    """``id(node) -> CodeRange`` (libcst's PositionProvider ranges) for ``nodes`` of ``module``;
    ``starts``: ``statement_starts`` of the same source, when the caller has Python's tree;
    ``memo``: ranges kept from earlier calls; ``parents``: ``id(node) -> parent`` of the
    module's nodes (the model's), which spares a walk and lets a node in a nested simple
    statement line take that line's ranges alone (with ``starts``)."""
    if parents is not None:
        where, nested = _statements_above(module, nodes, parents)
    else:
        where, nested = _top_level_statements(module, {id(node) for node in nodes}), {}
    by_statement: dict = {}
    for node in nodes:
        by_statement.setdefault(where.get(id(node)), []).append(node)
    if None in by_statement:  # a node outside the statements (the module itself)
        found = _ranges(module)
        return {id(node): _shifted(found[id(node)], 0) for node in nodes if id(node) in found}
    pairs = _pair_top_level(module, starts.top) if starts is not None else None
    positions: dict = {}
    if pairs is not None and starts is not None and starts.lines is not None:
        for index, held in by_statement.items():
            in_lines = [node for node in held if id(node) in nested]
            if in_lines:
                positions.update(_place_in_lines(module, index, in_lines, nested, starts, pairs[1], memo))
    # the rest (all of them without Python's tree) from their top-level statement's ranges
    offsets = pairs[0] if pairs is not None else None
    line, done = 0, 0
    if offsets is None:
        line = _line_breaks(module, module.header)
    for index in sorted(by_statement):
        rest = [node for node in by_statement[index] if id(node) not in positions]
        if not rest:
            continue
        if offsets is None:
            line += _line_breaks(module, module.body[done:index])
            done = index
        else:
            line = offsets[index]
        statement = module.body[index]
        ranges = memo.ranges(module, statement) if memo is not None else _statement_ranges(module, statement)
        for node in rest:
            span = ranges.get(id(node))
            if span is not None:
                positions[id(node)] = _shifted(span, line)
    return positions


def _pair_top_level(module: cst.Module, starts: List[int]) -> Optional[Tuple[List[int], List[int]]]:
    """For each statement of ``module.body``: the lines before it (its leading comment and
    blank lines included), from Python's statement starts, and which of Python's
    top-level statements it begins with; None when the two trees do not pair up. A
    simple statement line holds one Python statement per ``;`` part."""
    offsets, taken_at, taken = [], [], 0
    for statement in module.body:
        if taken >= len(starts):
            return None
        offsets.append(starts[taken] - 1 - len(statement.leading_lines))
        taken_at.append(taken)
        taken += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    return (offsets, taken_at) if taken == len(starts) else None


def _place_in_lines(module: cst.Module, index: int, nodes: List[cst.CSTNode],
                    nested: Dict[int, Tuple[cst.SimpleStatementLine, str]], starts: StatementStarts,
                    taken_at: List[int], memo: Optional[RangeMemo]) -> dict:
    """Positions of ``nodes``, each in a simple statement line nested in the top-level
    statement ``index``, from that line's ranges alone; empty where Python's statements
    in it do not pair up with libcst's."""
    assert starts.lines is not None
    by_line: Dict[int, List[cst.CSTNode]] = {}
    for node in nodes:
        by_line.setdefault(id(nested[id(node)][0]), []).append(node)
    taken = taken_at[index]
    end = starts.first[taken + 1] if taken + 1 < len(starts.first) else len(starts.lines)
    found: Dict[int, int] = {}
    if _in_order(module.body[index], starts.first[taken], set(by_line), found) != end or len(found) != len(by_line):
        return {}
    positions = {}
    for held in by_line.values():
        line, indent = nested[id(held[0])]
        ranges = memo.ranges(module, line, indent) if memo is not None else _line_ranges(module, line, indent)
        shift = starts.lines[found[id(line)]] - 1 - len(line.leading_lines) - _HOLDER_LINES
        for node in held:
            span = ranges.get(id(node))
            if span is not None:
                positions[id(node)] = _shifted(span, shift)
    return positions


def _in_order(statement: cst.CSTNode, index: int, wanted: set, found: Dict[int, int]) -> int:
    """Counts Python's statements through ``statement``, from ``index`` (its own place in
    ``StatementStarts.lines``): ``found`` gets the place of each simple statement line of
    ``wanted``; the place after it is returned."""
    if isinstance(statement, cst.SimpleStatementLine):
        if id(statement) in wanted:
            found[id(statement)] = index
        return index + len(statement.body)
    index += 1
    for part in _held(statement):
        if isinstance(part, cst.IndentedBlock):
            for inner in part.body:
                index = _in_order(inner, index, wanted, found)
        elif isinstance(part, cst.SimpleStatementSuite):
            index += len(part.body)
        else:  # an elif: in Python's tree, an if statement in the else branch
            index = _in_order(part, index, wanted, found)
    return index


def _held(statement: cst.CSTNode) -> list:
    """The suites of a compound statement, in source order, and an elif as itself."""
    body = getattr(statement, "body", None)
    parts: list = [body] if isinstance(body, cst.BaseSuite) else []
    for clause in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
        parts.append(clause.body)
    orelse = getattr(statement, "orelse", None)
    if orelse is not None:
        parts.append(orelse if isinstance(orelse, cst.If) else orelse.body)
    final = getattr(statement, "finalbody", None)
    if final is not None:
        parts.append(final.body)
    return parts


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


_INDENTING = (cst.IndentedBlock, cst.Match)  # a match statement indents its cases


def _statements_above(module: cst.Module, nodes: Sequence[cst.CSTNode], parents: dict) -> Tuple[dict, dict]:
    """``_top_level_statements`` by climbing from each node to the module; and, for a node in
    a simple statement line nested in its top-level statement, ``id(node) -> (that line,
    the indentation libcst prints it with)``."""
    index_of = {id(statement): index for index, statement in enumerate(module.body)}
    where: dict = {}
    nested: dict = {}
    for node in nodes:
        top, line, indent = _climb(node, parents, index_of, module.default_indent)
        if top is not None:
            where[id(node)] = index_of[id(top)]
            if line is not None and line is not top:
                nested[id(node)] = (line, indent)
    return where, nested


def _climb(node: cst.CSTNode, parents: dict, index_of: dict,
           default_indent: str) -> Tuple[Optional[cst.CSTNode], Optional[cst.SimpleStatementLine], str]:
    """From ``node`` up to its top-level statement (None if it has none): that statement,
    the innermost simple statement line on the way and what indents that line."""
    climbing: Optional[cst.CSTNode] = node
    line: Optional[cst.SimpleStatementLine] = None
    indents: List[str] = []
    while climbing is not None:
        if isinstance(climbing, cst.SimpleStatementLine):
            line = climbing
        elif line is not None and isinstance(climbing, _INDENTING):
            indents.append(default_indent if climbing.indent is None else climbing.indent)
        if id(climbing) in index_of:
            break
        climbing = parents.get(id(climbing))
    return climbing, line, "".join(reversed(indents))


def _ignore(node) -> None:
    pass


def _line_breaks(module: cst.Module, nodes) -> int:
    return sum(len(_LINE_BREAK.findall(module.code_for_node(node))) for node in nodes)


def _shifted(span: Span, lines: int) -> CodeRange:
    line, column, end_line, end_column = span
    return CodeRange(CodePosition(line + lines, column), CodePosition(end_line + lines, end_column))
