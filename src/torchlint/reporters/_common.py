"""What several output formats share: rule names, fix records, relative URIs, source lines."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

from torchlint.rule_index import RULES
from torchlint.codes import STATUS_CODES

# TL001 and TL002 are not rules, but they do appear in reports.
PSEUDO_RULES = {code: (name, line) for code, (name, line, _) in STATUS_CODES.items()}


def rule_name(code: str) -> Optional[str]:
    rule = RULES.get(code)  # the catalogue: reporting cached findings imports no rule
    return rule[0] if rule is not None else None


def fix_record(d) -> Optional[dict]:
    """``None`` or ``{"safety": "safe"|"unsafe", "description": ...}`` for a finding."""
    if d.fix is None:
        return None
    record = {"safety": d.fix.value}
    if d.fix_description:
        record["description"] = d.fix_description
    return record


def relative_path(path: str, base: Optional[str] = None) -> str:
    """``path`` relative to ``base`` (the working directory) with forward slashes,
    or absolute (still with forward slashes) when it lies outside."""
    base = os.path.abspath(base or os.getcwd())
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full, base)
    except ValueError:  # another drive on Windows
        return Path(full).as_posix()
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return Path(full).as_posix()
    return Path(rel).as_posix()


def uri_reference(path: str) -> str:
    """A relative path as a URI reference (``my dir/a.py`` -> ``my%20dir/a.py``)."""
    from urllib.parse import quote  # SARIF's alone: the text report of a cached run skips the import

    return quote(path, safe="/")


class SourceLines:
    """The source line a finding points at, read lazily once per file (or cell).

    ``given`` maps a path to its text when it did not come from disk (stdin).
    For a notebook the lines are those of the finding's cell, as written.
    """

    def __init__(self, given: Optional[Dict[str, str]] = None) -> None:
        self.given = dict(given or {})
        self._lines: Dict[tuple, List[str]] = {}

    def lines(self, path: str, cell: Optional[int] = None) -> List[str]:
        key = (path, cell)
        if key not in self._lines:
            self._lines[key] = self._load(path, cell)
        return self._lines[key]

    def line(self, d) -> Optional[str]:
        lines = self.lines(d.path, getattr(d, "cell", None))
        return lines[d.line - 1] if 0 < d.line <= len(lines) else None

    def file_lines(self, d) -> tuple:
        """(first, last) line of the *file* a finding spans, for tools that show a
        notebook as its JSON text: the JSON lines holding the cell's lines."""
        if d.cell is None:
            return d.line, d.end_line or d.line
        from torchlint.notebook import file_line

        text = self.given.get(d.path)
        try:
            data = text.encode("utf-8") if text is not None else Path(d.path).read_bytes()
        except OSError:
            return 1, 1
        first = file_line(data, d.cell, d.line) or 1
        return first, file_line(data, d.cell, d.end_line or d.line) or first

    def _load(self, path: str, cell: Optional[int]) -> List[str]:
        text = self.given.get(path)
        try:
            if cell is not None:
                from torchlint.notebook import cell_source

                data = text.encode("utf-8") if text is not None else Path(path).read_bytes()
                return _split(cell_source(data, cell))
            if text is None:
                from torchlint.source import decode

                text = decode(Path(path).read_bytes())
            return _split(text)
        except Exception:  # a report is never lost for want of its source line
            return []


def _split(text: str) -> List[str]:
    """Lines as Python's tokenizer counts them (only \\n, \\r\\n and \\r end a line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


# ANSI styles as ruff uses them: the path bold, the code bold red.
_BOLD, _RED_BOLD, _RESET = "\x1b[1m", "\x1b[1;31m", "\x1b[0m"


def wants_color(choice: str, stream, environ=None) -> bool:
    """``--color``: always, never, or auto: ``FORCE_COLOR`` (non-empty) turns colour on,
    else ``NO_COLOR`` (non-empty) turns it off, else only when ``stream`` is a terminal
    (ruff's order)."""
    if choice != "auto":
        return choice == "always"
    environ = os.environ if environ is None else environ
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def finding_line(d, color: bool = False) -> str:
    """``d.as_text()``, with the path and the code coloured when ``color``."""
    plain = d.as_text()
    if not color:
        return plain
    where = plain[len(d.path):plain.index(f": {d.code} ")]
    return f"{_BOLD}{d.path}{_RESET}{where}: {_RED_BOLD}{d.code}{_RESET} {d.message}"
