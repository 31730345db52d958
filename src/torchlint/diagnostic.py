"""What a check produces: a finding at a position, or an error about a file."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding. ``line`` and ``col`` are 1-based, as flake8 and editors show them."""

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
    # A fix the rule offers: "safe" (applied by --fix), "unsafe" (needs
    # --unsafe-fixes) or None; and what it does. Not part of identity.
    fix: Optional[str] = field(default=None, compare=False)
    fix_description: Optional[str] = field(default=None, compare=False)

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


@dataclass
class FileResult:
    path: str
    diagnostics: list = field(default_factory=list)
    errors: list = field(default_factory=list)
