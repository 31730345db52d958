"""``gitlab``: a GitLab code quality report (artifacts:reports:codequality).

A JSON list of ``{description, check_name, fingerprint, severity, location:
{path, lines: {begin, end}}}``. The fingerprint hashes the path, the code and
the text of the flagged line (not its number), so a finding keeps its identity
when lines above it move.
"""
from __future__ import annotations

import hashlib
import json

from torchlint.reporters._common import SourceLines, relative_path


def report(diagnostics, out, sources=None, **context) -> None:
    lines = SourceLines(sources)
    seen: dict = {}
    records = []
    for d in diagnostics:
        path = relative_path(d.path)
        cell = getattr(d, "cell", None)
        text = (lines.line(d) or "").strip()
        key = f"{path}\0{cell}\0{d.code}\0{text}"
        seen[key] = seen.get(key, 0) + 1  # identical lines in one file stay distinct
        fingerprint = hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest()
        where = f"cell {cell}, line {d.line}: " if cell is not None else ""
        begin, end = lines.file_lines(d)  # a notebook's lines are those of its JSON file
        records.append({
            "description": f"{where}{d.code} {d.message}",
            "check_name": d.code,
            "fingerprint": fingerprint,
            "severity": "major",
            "location": {"path": path, "lines": {"begin": begin, "end": end}},
        })
    json.dump(records, out, indent=2)
    out.write("\n")
