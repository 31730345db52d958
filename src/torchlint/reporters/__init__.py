"""Output formats: ``text`` (ruff-like lines) and ``json`` (stable fields)."""
from __future__ import annotations

import json

from torchlint.rules import RULES_BY_CODE


def text(diagnostics, out) -> None:
    for d in diagnostics:
        out.write(d.as_text() + "\n")
    count = len(diagnostics)
    if count:
        files = len({d.path for d in diagnostics})
        noun = "finding" if count == 1 else "findings"
        out.write(f"Found {count} {noun} in {files} file{'s' if files != 1 else ''}.\n")
    else:
        out.write("All checks passed!\n")


def as_json(diagnostics, out) -> None:
    records = [
        {
            "path": d.path,
            "line": d.line,
            "column": d.col,
            "end_line": d.end_line,
            "end_column": d.end_col,
            "code": d.code,
            "name": RULES_BY_CODE[d.code].name if d.code in RULES_BY_CODE else None,
            "message": d.message,
        }
        for d in diagnostics
    ]
    json.dump(records, out, indent=2)
    out.write("\n")


FORMATS = {"text": text, "json": as_json}
