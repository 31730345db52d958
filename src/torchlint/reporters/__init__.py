"""Output formats, chosen with ``--output-format``.

``text`` (default: one line per finding and a summary), ``concise`` (the lines
only), ``full`` (each finding with its source line and a caret), ``json``
(stable fields, see docs/ci.md), ``sarif`` (SARIF 2.1.0 for code scanning),
``github`` (GitHub Actions workflow annotations) and ``gitlab`` (a GitLab code
quality report). Every reporter is ``report(diagnostics, out, **context)``;
``context`` may carry ``sources`` ({path: text} for files not on disk, such as
stdin). Formats other than text and json live in their own modules and are
imported only when chosen.
"""
from __future__ import annotations

import importlib
import json


def summary(diagnostics, out, fixed: int = 0, hidden_fixes: int = 0, unchecked: int = 0) -> None:
    """The closing line; after ``--fix``, how many were fixed and how many remain.

    "All checks passed!" only when every file was checked: ``unchecked`` counts
    paths that were missing or skipped (their notes are on stderr).
    """
    count = len(diagnostics)
    if fixed:
        total = count + fixed
        noun = "finding" if total == 1 else "findings"
        out.write(f"Found {total} {noun} ({fixed} fixed, {count} remaining).\n")
    elif count:
        files = len({d.path for d in diagnostics})
        noun = "finding" if count == 1 else "findings"
        out.write(f"Found {count} {noun} in {files} file{'s' if files != 1 else ''}.\n")
    elif not unchecked:
        out.write("All checks passed!\n")
    else:
        out.write("No findings in the files checked.\n")
    if unchecked:
        out.write(f"{unchecked} path{'s' if unchecked != 1 else ''} not checked (see the notes above).\n")
    out.write(hidden_fixes_line(hidden_fixes))


def hidden_fixes_line(count: int) -> str:
    """How many unsafe fixes were held back and how to apply them; "" for none."""
    return f"{count} fix{'es' if count != 1 else ''} available with --unsafe-fixes.\n" if count else ""


def text(diagnostics, out, **context) -> None:
    """``context`` may also say ``color`` (path and code in colour) and ``quiet`` (no summary)."""
    from torchlint.reporters._common import finding_line

    color = context.get("color", False)
    for d in diagnostics:
        out.write(finding_line(d, color) + "\n")
    if context.get("quiet"):
        return
    summary(diagnostics, out, context.get("fixed", 0), context.get("hidden_fixes", 0), context.get("unchecked", 0))


def as_json(diagnostics, out, **context) -> None:
    from torchlint.reporters._common import fix_record, rule_name

    records = [
        {
            "path": d.path,
            "line": d.line,
            "column": d.col,
            "end_line": d.end_line,
            "end_column": d.end_col,
            "code": d.code,
            "name": rule_name(d.code),
            "message": d.message,
            "fix": fix_record(d),
            "cell": getattr(d, "cell", None),
        }
        for d in diagnostics
    ]
    json.dump(records, out, indent=2)
    out.write("\n")


def _lazy(module: str):
    def report(diagnostics, out, **context) -> None:
        importlib.import_module(f"{__name__}.{module}").report(diagnostics, out, **context)
    return report


FORMATS = {
    "text": text,
    "concise": _lazy("concise"),
    "full": _lazy("full"),
    "json": as_json,
    "sarif": _lazy("sarif"),
    "github": _lazy("github"),
    "gitlab": _lazy("gitlab"),
}
