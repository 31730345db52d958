"""Jupyter notebooks (``.ipynb``, nbformat 4): their code cells, linted as one module.

The code cells are joined in order, so a model defined in cell 2 and evaluated
in cell 5 is seen as one program, as the kernel sees it. Each cell is preceded
by a marker comment, which lets findings (and fixed text) be mapped back to
their cell. IPython syntax that is not Python is masked line for line, so line
numbers never move: line magics (``%matplotlib``), shell escapes (``!pip``,
``files = !ls``), help (``obj?``, ``?obj``) and cell magics (``%%bash`` masks
the whole cell; ``%%time`` and the like only their first line, the rest is
Python). As in IPython, a magic is recognised only where a statement starts:
``%(x)`` continuing an expression inside brackets, or ``!`` inside a string,
is Python. A cell whose first line is indented is dedented by that indentation
first (IPython's leading-indent transform); columns are mapped back, and
fixed lines get the indentation again. A cell that parses as Python as it is
is never changed.

A cell that is not Python on its own (an exercise's ``model = ``, a ``## TODO``
left in a block) is what the kernel refuses and runs nothing of, while the
other cells run: when the joined module does not parse, each such cell gets
its syntax error (TL001, at its line) and the other cells are linted joined
as before, the broken ones left out. The fixer does the same: it fixes the
cells that parse and never writes a broken cell.

A finding's ``cell`` is the 1-based position of its cell in the notebook's
``cells`` list (markdown and raw cells count, as you scroll); ``line`` and
``col`` are within that cell.

``rewrite`` is the hook the fixer uses: it receives the joined module text,
returns the fixed text, and ``rewrite`` puts the changed cells back into the
notebook's JSON, byte for byte identical outside those cells' ``source``.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import io
import json
import re
import tokenize
from json.decoder import scanstring  # type: ignore[attr-defined]  # public in json.decoder, not in typeshed
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple, Type

from torchlint.diagnostic import Diagnostic, FileError, FileResult

if TYPE_CHECKING:
    from torchlint.rule import Rule

_MARKER = "# %% torchlint cell {} %%"
_MARKER_RE = re.compile(r"^# %% torchlint cell (\d+) %%$")
# Cell magics whose body is Python run in the kernel: only the magic line is masked.
_PYTHON_CELL_MAGICS = frozenset("time timeit capture prun debug memit snakeviz".split())
# Help: ``obj?``, ``?obj``, ``obj.attr??``, ``x[0]?``, a lone ``?``, and wildcard searches
# (``torch.*Tensor?``, which IPython runs as %psearch).
_HELP_OBJECT = r"[\w*]+(?:\.[\w*]+|\[-?\d+\])*"
_HELP = re.compile(rf"^(?:\?{{1,2}}\s*(?:{_HELP_OBJECT})?|{_HELP_OBJECT}\s*\?{{1,2}})\s*$")
_ASSIGNED_MAGIC = re.compile(r"^[\w.,\s\[\]()*]+=\s*[%!]")
_LEFT_OUT = " (this cell is left out; the other cells are checked without it)"
_PYTHON_NAMES = ("python", "python2", "python3", "ipython", "ipython2", "ipython3")


class NotebookError(ValueError):
    """A notebook torchlint cannot read; the message says why.

    ``invalid`` notebooks (not JSON, not a notebook) are reported as TL001
    findings at ``line``/``col`` of the file, as a syntax error is; others
    (an nbformat torchlint does not read) only as a note.
    """

    def __init__(self, message: str, invalid: bool = True, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.invalid, self.line, self.col = invalid, line, col


@dataclasses.dataclass
class Cell:
    number: int  # 1-based position in the notebook's cells
    lines: List[str]  # as written, without line ends
    masked: List[str]  # what the linter reads: dedented as IPython does, magics replaced, same count
    start: int = 0  # 1-based line of the cell's first line in the joined module
    crlf: bool = False
    final_newline: bool = False
    indent: str = ""  # the first line's indentation, which IPython removes from the cell

    def column(self, line: int, col: int) -> int:
        """The column in the cell as written of ``col`` on its ``line`` (1-based) as linted."""
        written = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return col + len(self.indent) if self.indent and written.startswith(self.indent) else col

    def dedented(self) -> List[str]:
        return _dedent(self.lines, self.indent)


# -- reading -----------------------------------------------------------------

def load(data: bytes) -> dict:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not a valid notebook: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text or text.isspace():  # not ``strip()``: a copy of megabytes of outputs
        raise NotebookError("not a valid notebook: the file is empty")
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"not a valid notebook: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            line=exc.lineno, col=exc.colno,
        ) from None
    except RecursionError:
        raise NotebookError("not a valid notebook: JSON nested too deep") from None
    if not isinstance(nb, dict):
        raise NotebookError("not a valid notebook: the JSON is not an object")
    major = nb.get("nbformat")
    if "worksheets" in nb or (isinstance(major, int) and major < 4):
        raise NotebookError(
            f"nbformat {major or 3} notebooks are not supported; upgrade it with "
            "`jupyter nbconvert --to notebook --nbformat 4 --inplace FILE`", invalid=False,
        )
    if not isinstance(nb.get("cells"), list):
        raise NotebookError("not a valid notebook: no 'cells' list (is it an nbformat 4 notebook?)")
    return nb


def language(nb: dict) -> Optional[str]:
    meta = nb.get("metadata")
    if not isinstance(meta, dict):
        return None
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = meta.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str):
            return value[field]
    return None


def _cell_text(cell, number: int) -> Optional[str]:
    if not isinstance(cell, dict):
        raise NotebookError(f"not a valid notebook: cell {number} is not an object")
    if cell.get("cell_type") != "code":
        return None
    source = cell.get("source", "")
    if isinstance(source, str):
        return source
    if isinstance(source, list):
        try:
            return "".join(source)  # refuses any part that is not text
        except TypeError:
            pass
    raise NotebookError(f"not a valid notebook: cell {number} has a 'source' that is not text")


def code_cells(nb: dict) -> List[Cell]:
    cells = []
    for number, raw in enumerate(nb["cells"], start=1):
        text = _cell_text(raw, number)
        if text is None:
            continue
        lines = _split(text)
        if not any(line.strip() for line in lines):
            continue
        indent = _leading_indent(lines)
        cells.append(Cell(number, lines, _mask(_dedent(lines, indent)), crlf="\r\n" in text,
                          final_newline=text.endswith(("\n", "\r")), indent=indent))
    return cells


def _leading_indent(lines: List[str]) -> str:
    """The indentation of a cell's first line: IPython runs an indented cell dedented by it
    (a block pasted from inside a function), unless the cell is Python as written."""
    first = lines[0]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if not indent or _parses(lines):
        return ""
    return indent


def _dedent(lines: List[str], indent: str) -> List[str]:
    """IPython's leading-indent transform: ``indent`` comes off every line that starts with it."""
    if not indent:
        return list(lines)
    return [line[len(indent):] if line.startswith(indent) else line for line in lines]


def _parses(lines: List[str]) -> bool:
    try:
        ast.parse("\n".join(lines))
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _split(text: str) -> List[str]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def cell_source(data: bytes, number: int) -> str:
    """The text of cell ``number`` (1-based) as written in the notebook."""
    nb = load(data)
    if not 0 < number <= len(nb["cells"]):
        raise NotebookError(f"no cell {number}")
    return _cell_text(nb["cells"][number - 1], number) or ""


# -- IPython syntax ----------------------------------------------------------

def _is_magic(stripped: str) -> bool:
    # Each pattern needs its character: a line without one skips the regex (most lines).
    return (
        stripped.startswith(("%", "!"))
        or ("?" in stripped and bool(_HELP.match(stripped)))
        or (("%" in stripped or "!" in stripped) and bool(_ASSIGNED_MAGIC.match(stripped)))
    )


def _has_magic_characters(lines: List[str]) -> bool:
    """Whether one of the lines holds a character every magic needs (``_is_magic``): one scan
    of the cell's text, where most cells have none, instead of a test per line."""
    text = "\n".join(lines)
    return "%" in text or "!" in text or "?" in text


def _placeholder(line: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return indent + "pass" if indent else ""  # an indented magic may be a block's only line


def _mask(lines: List[str]) -> List[str]:
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return list(lines)
    head = lines[first].strip()
    if not _has_magic_characters(lines) or (
            not head.startswith("%%") and not any(_is_magic(line.strip()) for line in lines)):
        return list(lines)  # no line IPython could read as a magic: nothing to mask, no parse to ask
    if _parses(lines):
        return list(lines)  # plain Python: leave it exactly as written
    masked = list(lines)
    if head.startswith("%%"):
        name = head[2:].split(None, 1)[0] if head[2:].strip() else ""
        if name not in _PYTHON_CELL_MAGICS:  # %%bash, %%html, %%writefile...: not Python
            return ["" for _ in lines]
        masked[first] = ""
    continued = None  # the first line of a magic continued with a backslash
    for i, line in enumerate(lines):
        if i == first and head.startswith("%%"):
            continue
        if continued is not None or (_is_magic(line.strip()) and _starts_statement(masked[:i])):
            # a continuation line's own indentation means nothing: use the magic's
            masked[i] = _placeholder(continued if continued is not None else line)
            if continued is None and line.rstrip().endswith("\\"):
                continued = line
            elif not line.rstrip().endswith("\\"):
                continued = None
    return masked


def _starts_statement(before: List[str]) -> bool:
    """Does a new statement begin after these lines? Not inside open brackets, a
    string or a backslash continuation, where ``%(x)s`` or ``!`` is Python, as IPython
    recognises magics only at the start of a logical line."""
    if before and before[-1].rstrip().endswith("\\"):
        return False
    try:
        for _ in tokenize.generate_tokens(io.StringIO("\n".join(before) + "\n").readline):
            pass
    except tokenize.TokenError:  # EOF inside brackets or a triple-quoted string
        return False
    except SyntaxError:  # an indentation tokenize refuses: lines above are not ours to judge
        return True
    return True


# -- the joined module -------------------------------------------------------

def module_source(cells: Sequence[Cell]) -> str:
    """The code cells as one module; sets each cell's ``start`` line."""
    out, line = [], 1
    for cell in cells:
        out.append(_MARKER.format(cell.number))
        cell.start = line + 1
        out.extend(cell.masked)
        line += 1 + len(cell.masked)
    return "\n".join(out) + "\n"


def _locate(cells: Sequence[Cell], line: int) -> Tuple[Cell, int]:
    """(cell, line within it) for a line of the joined module (clamped into a cell)."""
    chosen = cells[0]
    for cell in cells:
        if cell.start - 1 <= line:
            chosen = cell
    within = min(max(line - chosen.start + 1, 1), max(len(chosen.lines), 1))
    return chosen, within


def lint_notebook(data: bytes, path: str, rules: Sequence[Type[Rule]], **options) -> FileResult:
    from torchlint.engine import PARSE_ERROR, lint_source

    try:
        nb = load(data)
        lang = language(nb)
        if lang is not None and lang.lower() not in _PYTHON_NAMES:
            return FileResult(path, errors=[FileError(path, f"notebook language is {lang!r}, not Python; skipped")])
        cells = code_cells(nb)
    except NotebookError as exc:
        if exc.invalid:
            return FileResult(path, diagnostics=[Diagnostic(path, exc.line, exc.col, PARSE_ERROR, str(exc))])
        return FileResult(path, errors=[FileError(path, str(exc))])
    if not cells:
        return FileResult(path)  # only markdown: nothing to check, as in an empty file
    inner = lint_source(module_source(cells), path, rules, **options)
    broken = []
    if any(d.code == PARSE_ERROR for d in inner.diagnostics):
        broken = broken_cells(cells, path)
        if broken:  # the kernel runs the other cells: lint them as one program, as before
            cells = _without(cells, broken)
            inner = lint_source(module_source(cells), path, rules, **options) if cells else FileResult(path)
    result = FileResult(path, errors=list(inner.errors), dependencies=inner.dependencies)
    result.diagnostics.extend(_in_cell(cell, d) for cell, d in broken)
    result.diagnostics.extend(_mapped(cells, d) for d in inner.diagnostics)
    result.diagnostics.sort(key=lambda d: (d.cell, d.line, d.col, d.code))
    return result


def broken_cells(cells: Sequence[Cell], path: str) -> List[Tuple[Cell, Diagnostic]]:
    """The cells that are not Python on their own, each with Python's syntax error (TL001)
    at a line of the cell: the kernel refuses such a cell and still runs the others."""
    from torchlint.engine import PARSE_ERROR, lint_source

    out = []
    for cell in cells:
        alone = lint_source("\n".join(cell.masked) + "\n", path, ())
        error = next((d for d in alone.diagnostics if d.code == PARSE_ERROR), None)
        if error is not None:
            out.append((cell, error))
    return out


def _without(cells: Sequence[Cell], broken: Sequence[Tuple[Cell, Diagnostic]]) -> List[Cell]:
    left_out = {cell.number for cell, _ in broken}
    return [cell for cell in cells if cell.number not in left_out]


def _in_cell(cell: Cell, d: Diagnostic) -> Diagnostic:
    """``d``, found in the cell's own text (line 1 is its first line), placed in the notebook."""
    line = min(max(d.line, 1), max(len(cell.lines), 1))
    end_line, end_col = d.end_line, d.end_col
    if end_line is not None and end_line > len(cell.lines):  # past the cell's end: stop at it
        end_line, end_col = None, None
    elif end_line is not None and end_col is not None:
        end_col = cell.column(end_line, end_col)
    return dataclasses.replace(d, line=line, col=cell.column(line, d.col), end_line=end_line, end_col=end_col,
                               cell=cell.number, message=d.message + _LEFT_OUT)


def _mapped(cells: Sequence[Cell], d: Diagnostic) -> Diagnostic:
    """``d``, found in the joined module of ``cells``, placed in its cell."""
    cell, line = _locate(cells, d.line)
    end_line, end_col = d.end_line, d.end_col
    if end_line is not None:
        end_cell, end_line = _locate(cells, end_line)
        if end_cell is not cell:  # a statement that runs on into the next cell
            end_line = len(cell.lines)
            end_col = len(cell.lines[-1]) + 1 if cell.lines else 1
        elif end_col is not None:
            end_col = cell.column(end_line, end_col)
    return dataclasses.replace(d, line=line, col=cell.column(line, d.col), end_line=end_line, end_col=end_col,
                               cell=cell.number)


# -- writing fixed cells back (the fixer's hook) -----------------------------

def rewrite(data: bytes, transform: Callable[[str], Optional[str]]) -> Optional[bytes]:
    """Apply ``transform`` (joined module text -> fixed text, or None) to a notebook.

    Returns the new notebook bytes, or None when nothing changed. Cells that
    are not Python on their own are left out of the module and never written
    (see ``lint_notebook``). Only the ``source`` of cells whose code changed
    is rewritten, in the layout the file already uses; every other byte stays
    as it was. Raises NotebookError when
    the fixed text cannot be mapped back to the cells (a marker was lost, or a
    fix touched a masked IPython line), leaving the notebook alone.
    """
    nb = load(data)
    cells = _parsed_cells(code_cells(nb))
    if not cells:
        return None
    fixed = transform(module_source(cells))
    if fixed is None:
        return None
    new_lines = _cells_of(fixed, cells)
    text = data.decode("utf-8-sig")
    bom = data[:3] == b"\xef\xbb\xbf"
    spans = _source_spans(text)
    ascii_only = text.isascii()
    edits = []
    for cell in cells:
        lines = new_lines[cell.number]
        if lines == cell.masked:
            continue
        merged = _restore(cell, lines)
        if merged == cell.lines:
            continue
        new_text = "\n".join(merged)
        if cell.final_newline or not merged:
            new_text += "\n" if merged else ""
        if cell.crlf:
            new_text = new_text.replace("\n", "\r\n")
        start, end = spans[cell.number - 1]
        edits.append((start, end, _render(text, start, end, new_text, ascii_only)))
    if not edits:
        return None
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def _parsed_cells(cells: List[Cell]) -> List[Cell]:
    """``cells`` less those that are not Python on their own, when the joined module does not parse:
    the module ``lint_notebook`` checked, so the fixes found there are the ones applied."""
    from torchlint.engine import PARSE_ERROR, lint_source

    if not cells or not any(d.code == PARSE_ERROR for d in lint_source(module_source(cells), "", ()).diagnostics):
        return cells
    return _without(cells, broken_cells(cells, ""))


def _cells_of(fixed: str, cells: Sequence[Cell]) -> dict:
    out: Dict[int, List[str]] = {}
    current = None
    preamble: List[str] = []  # lines a fix put above the first marker (an import)
    for line in _split(fixed):
        match = _MARKER_RE.match(line)
        if match:
            current = int(match.group(1))
            out[current] = list(preamble) if not out else []
            preamble = []
        elif current is None:
            preamble.append(line)
        else:
            out[current].append(line)
    if sorted(out) != sorted(cell.number for cell in cells):
        raise NotebookError("a fix removed a cell boundary; notebook left unchanged")
    return out


def _restore(cell: Cell, fixed: List[str]) -> List[str]:
    """The fixed lines with masked IPython lines put back as written."""
    plain = cell.dedented()
    magic = {i for i, (a, b) in enumerate(zip(plain, cell.masked)) if a != b}
    if not magic and not cell.indent:
        return fixed
    out = []
    matcher = difflib.SequenceMatcher(None, cell.masked, fixed, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.extend(cell.lines[i1:i2])
            continue
        if magic & set(range(i1, i2)):
            raise NotebookError(f"a fix touched an IPython line in cell {cell.number}; notebook left unchanged")
        out.extend(cell.indent + line if line.strip() else line for line in fixed[j1:j2])
    return out


# Locating each cell's "source" in the raw JSON, so that only it is replaced.
_WS = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


def _ws(text: str, i: int) -> int:
    space = _WS.match(text, i)
    assert space is not None  # _WS matches the empty string too
    return space.end()


def _value_end(text: str, i: int) -> int:
    i = _ws(text, i)
    if text[i] == '"':
        return scanstring(text, i + 1)[1]
    if text[i] == "{":
        return _members(text, i)[1]
    if text[i] == "[":
        return _items(text, i)[1]
    match = _SCALAR.match(text, i)
    if not match:
        raise NotebookError(f"not a valid notebook: unexpected {text[i]!r} at offset {i}")
    return match.end()


def _members(text: str, i: int):
    """({key: (value start, value end)}, end) for the object at ``i``."""
    out: Dict[str, Tuple[int, int]] = {}
    i = _ws(text, i) + 1
    while True:
        i = _ws(text, i)
        if text[i] == "}":
            return out, i + 1
        if text[i] == ",":
            i += 1
            continue
        key, i = scanstring(text, i + 1)
        i = _ws(text, i) + 1  # the colon
        start = _ws(text, i)
        i = _value_end(text, start)
        out[key] = (start, i)


def _items(text: str, i: int):
    """([(item start, item end)], end) for the array at ``i``."""
    out: List[Tuple[int, int]] = []
    i = _ws(text, i) + 1
    while True:
        i = _ws(text, i)
        if text[i] == "]":
            return out, i + 1
        if text[i] == ",":
            i += 1
            continue
        end = _value_end(text, i)
        out.append((i, end))
        i = end


def file_line(data: bytes, cell: int, line: int) -> Optional[int]:
    """The line of the notebook *file* (its JSON) that holds line ``line`` of cell ``cell``,
    for tools that annotate the file as text (GitHub, GitLab); None if it cannot be told."""
    try:
        text = data.decode("utf-8-sig")
        start, end = _source_spans(text)[cell - 1]
    except (NotebookError, UnicodeDecodeError, IndexError, KeyError, TypeError, ValueError):
        return None
    if start is None:
        return None
    at = start
    if text[start] == "[":  # one JSON string per line, as Jupyter writes them
        items, _ = _items(text, start)
        if not items:
            return None
        at = items[min(line, len(items)) - 1][0]
    return text.count("\n", 0, at) + 1


def _source_spans(text: str) -> List[Tuple[int, int]]:
    top, _ = _members(text, 0)
    cells, _ = _items(text, top["cells"][0])
    spans = []
    for start, _end in cells:
        members, _ = _members(text, start)
        spans.append(members.get("source", (None, None)))
    return spans


def _render(text: str, start: int, end: int, new_text: str, ascii_only: bool) -> str:
    """``new_text`` as a JSON source value laid out like the one at text[start:end]."""
    if start is None:
        raise NotebookError("a fixed cell has no 'source' to rewrite")
    dump = lambda value: json.dumps(value, ensure_ascii=ascii_only)  # noqa: E731
    if text[start] == '"':
        return dump(new_text)
    parts = re.findall(r"[^\n]*\n|[^\n]+$", new_text)
    items, _ = _items(text, start)
    if not items:
        return dump(parts)
    opening = text[start + 1:items[0][0]]
    closing = text[items[-1][1]:end - 1]
    separator = text[items[0][1]:items[1][0]] if len(items) > 1 else "," + opening
    if not parts:
        return "[]"
    return "[" + opening + separator.join(dump(part) for part in parts) + closing + "]"
