"""``concise``: one ``path:line:col: CODE message`` line per finding, nothing else."""
from __future__ import annotations


def report(diagnostics, out, **context) -> None:
    for d in diagnostics:
        out.write(d.as_text() + "\n")
