"""``github``: GitHub Actions workflow commands, shown as annotations on the diff.

``::error file=train.py,line=10,col=9,endLine=10,endColumn=28,title=TL301::message``
"""
from __future__ import annotations

from torchlint.reporters._common import SourceLines, relative_path


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def report(diagnostics, out, sources=None, **context) -> None:
    lines = SourceLines(sources)
    for d in diagnostics:
        cell = d.cell
        if cell is None:
            props = [f"file={_prop(relative_path(d.path))}", f"line={d.line}", f"col={d.col}"]
            if d.end_line is not None and d.end_col is not None:
                props += [f"endLine={d.end_line}", f"endColumn={d.end_col}"]
        else:  # GitHub shows a notebook as its JSON: the lines there, the cell in the text
            first, last = lines.file_lines(d)
            props = [f"file={_prop(relative_path(d.path))}", f"line={first}", f"endLine={last}"]
        where = f"cell {cell}, line {d.line}: " if cell is not None else ""
        props.append(f"title={_prop(d.code)}")
        out.write(f"::error {','.join(props)}::{_data(where + d.code + ' ' + d.message)}\n")
