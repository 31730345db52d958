"""``github``: GitHub Actions workflow commands, shown as annotations on the diff.

``::error file=train.py,line=10,col=9,endLine=10,endColumn=28,title=TL301::message``
"""
from __future__ import annotations

from torchlint.reporters._common import relative_path


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def report(diagnostics, out, **context) -> None:
    for d in diagnostics:
        props = [f"file={_prop(relative_path(d.path))}", f"line={d.line}", f"col={d.col}"]
        if d.end_line is not None and d.end_col is not None:
            props += [f"endLine={d.end_line}", f"endColumn={d.end_col}"]
        cell = getattr(d, "cell", None)
        # GitHub has no notion of notebook cells: the cell goes into the text.
        where = f"cell {cell}, line {d.line}: " if cell is not None else ""
        props.append(f"title={_prop(d.code)}")
        out.write(f"::error {','.join(props)}::{_data(where + d.code + ' ' + d.message)}\n")
