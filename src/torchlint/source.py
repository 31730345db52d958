"""A file's text and Python's verdict on it, before any analysis: decoding as Python
does, and ``ast.parse`` as ``python file.py`` would run it.

Kept apart from ``engine`` so that a file no rule can apply to (``runner``'s light
path) is decoded and syntax-checked without importing libcst, the model or the rules.
"""
from __future__ import annotations

import ast
import io
import sys
import tokenize
import warnings
from dataclasses import dataclass
from typing import Optional, Tuple

from torchlint.codes import PARSE_ERROR
from torchlint.diagnostic import Diagnostic

_PYTHON_RECURSION_LIMIT = 1000  # CPython's default


def decode(data: bytes) -> str:
    """Bytes to text the way Python does: BOM, then a coding declaration, then UTF-8."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def byte_position(data: bytes, offset: int) -> Tuple[int, int]:
    """1-based (line, column in characters) of byte ``offset``, where decoding failed."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


@dataclass(frozen=True)
class SyntaxProblem:
    """Why Python refuses a source, where it says so (1-based line and column, in characters)."""

    message: str
    line: int = 1
    col: int = 1
    end_line: Optional[int] = None
    end_col: Optional[int] = None

    def diagnostic(self, path: str) -> Diagnostic:
        return Diagnostic(path, self.line, self.col, PARSE_ERROR, f"syntax error: {self.message}",
                          self.end_line, self.end_col)

    @classmethod
    def of(cls, exc: SyntaxError, source: str) -> "SyntaxProblem":
        if exc.lineno is None:  # no position given: a null byte, on the Pythons that say so
            return cls.at_null_byte(exc.msg or str(exc), source)
        line, col = exc.lineno, max(exc.offset or 1, 1)
        end_line, end_col = exc.end_lineno, exc.end_offset
        if end_line is None or end_col is None or (end_line, end_col) <= (line, col):
            end_line = end_col = None
        return cls(exc.msg, line, col, end_line, end_col)

    @classmethod
    def at_null_byte(cls, message: str, source: str) -> "SyntaxProblem":
        at = source.find("\0")
        if at < 0:
            return cls(message)
        line = source.count("\n", 0, at) + 1
        col = at - (source.rfind("\n", 0, at) + 1) + 1
        return cls(message, line, col, line, col + 1)


def python_parse(source: str) -> Tuple[Optional[ast.Module], Optional[SyntaxProblem]]:
    """(tree, None), or (None, why not) as ``python file.py`` would parse it: at Python's
    default recursion limit (not the raised one libcst needs) and without printing
    its SyntaxWarnings (``1()``, ``x is 1``) on torchlint's stderr."""
    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(_PYTHON_RECURSION_LIMIT)
    except RecursionError:  # already deeper than that: keep the current limit
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source), None
    except (RecursionError, MemoryError):
        return None, SyntaxProblem("too deeply nested for Python's own parser; not analysed")
    except SyntaxError as exc:
        return None, SyntaxProblem.of(exc, source)
    except ValueError as exc:  # a null byte, on Pythons before 3.12
        return None, SyntaxProblem.at_null_byte(str(exc), source)
    finally:
        sys.setrecursionlimit(old)

