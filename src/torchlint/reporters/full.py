"""``full``: each finding with the source line it points at and a caret under it.

::

    train.py:10:9: TL301 tensor that carries an autograd graph ...
       |
    10 |         losses.append(loss)
       |         ^^^^^^^^^^^^^^^^^^^ TL301
       |
"""
from __future__ import annotations

from torchlint.reporters import summary
from torchlint.reporters._common import SourceLines, finding_line, fix_record

_TAB = 4


def report(diagnostics, out, sources=None, **context) -> None:
    lines = SourceLines(sources)
    color = context.get("color", False)
    for d in diagnostics:
        out.write(finding_line(d, color) + "\n")
        src = lines.line(d)
        if src is not None:
            out.write(_snippet(d, src))
        fix = fix_record(d)
        if fix is not None:
            what = fix.get("description") or "available"
            out.write(f"  = fix ({fix['safety']}): {what}\n")
        out.write("\n")
    if context.get("quiet"):
        return
    summary(diagnostics, out, context.get("fixed", 0), context.get("hidden_fixes", 0), context.get("unchecked", 0))


def _snippet(d, src: str) -> str:
    number = str(d.line)
    pad = " " * len(number)
    start = max(d.col - 1, 0)
    if d.end_line == d.line and d.end_col and d.end_col > d.col:
        stop = d.end_col - 1
    else:  # spans lines or has no end: underline to the end of this line
        stop = len(src.rstrip())
    shown = src.rstrip().expandtabs(_TAB)
    indent = len(src[:start].expandtabs(_TAB))
    width = max(len(src[:stop].expandtabs(_TAB)) - indent, 1)
    return (
        f"{pad} |\n"
        f"{number} | {shown}\n"
        f"{pad} | {' ' * indent}{'^' * width} {d.code}\n"
        f"{pad} |\n"
    )
