"""What a check produces: a finding at a position, or an error about a file."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Optional


class Applicability(str, enum.Enum):
    """How sure a fix is to keep the program's meaning (ruff's word for it).

    ``SAFE`` fixes apply with ``--fix``; ``UNSAFE`` ones may change what the
    program does and need ``--unsafe-fixes``. A str, so JSON, caches and
    comparisons see ``"safe"``/``"unsafe"``.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"

    __str__ = str.__str__

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)


def allowed_fixes(unsafe: bool) -> frozenset:
    """The applicabilities ``--fix`` applies, with or without ``--unsafe-fixes``."""
    return frozenset(Applicability) if unsafe else frozenset({Applicability.SAFE})


# The fields a Diagnostic is stored and cached with (``edit`` lives in memory only).
_RECORD_FIELDS = ("path", "line", "col", "code", "message", "end_line", "end_col", "cell", "fix",
                  "fix_description")


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding, from the engine to every reporter, the fixer, the cache and the server.

    ``line`` and ``col`` are 1-based, as flake8 and editors show them.
    """

    path: str
    line: int
    col: int
    code: str
    message: str
    end_line: Optional[int] = field(default=None, compare=False)
    end_col: Optional[int] = field(default=None, compare=False)
    # Notebooks only: the 1-based position of the cell in the notebook's
    # ``cells`` (markdown cells count); ``line`` is then the line in that cell.
    cell: Optional[int] = None
    # The fix the rule offers, if any: how safe it is and what it does. Not part of identity.
    fix: Optional[Applicability] = field(default=None, compare=False)
    fix_description: Optional[str] = field(default=None, compare=False)
    # The fix's tree edits (a ``torchlint.rule.Fix``), kept only by the fix loop,
    # which re-lints the tree it is about to edit; never stored or reported.
    edit: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.fix is not None and not isinstance(self.fix, Applicability):
            object.__setattr__(self, "fix", Applicability(self.fix))  # read back from a cache

    def record(self) -> dict:
        """The stored form (JSON-ready), as the result cache keeps it."""
        return {name: getattr(self, name) for name in _RECORD_FIELDS}

    def as_text(self) -> str:
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:line {self.line}:col {self.col}: {self.code} {self.message}"
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


@dataclass(frozen=True)
class FileError:
    """A file torchlint could not fully check; the run goes on with the others."""

    path: str
    message: str
    # An internal error (a rule raised) makes the CLI exit 2; an unreadable
    # file is only reported.
    internal: bool = False


def error_summary(exc: BaseException, limit: int = 200) -> str:
    """``Type: message`` on one line, for a report of a bug of ours: libcst's KeyError names
    its key, a node whose repr is its whole subtree, thousands of lines for one loop."""
    lines = str(exc).strip().splitlines() or [""]
    text = lines[0] if len(lines) == 1 and len(lines[0]) <= limit else lines[0][:limit].rstrip() + " ..."
    return f"{type(exc).__name__}: {text}"


@dataclass
class FileResult:
    path: str
    diagnostics: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    # Other files of the project the result depends on: path -> (mtime_ns, size) when read.
    dependencies: dict = field(default_factory=dict)
