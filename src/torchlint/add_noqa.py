"""``torchlint check --add-noqa``: a ``# noqa: TLxxx`` comment on every finding's line.

The comment goes where the engine reads it (``noqa.suppressed``: the finding's
own line, the first ``# noqa`` on it), so the next run is clean. A line that
already has a ``# noqa: A,B`` list gets the code merged into it. A line whose
end lies inside a multi-line string, or that continues with a backslash, cannot
take a comment: it is left alone and reported. Notebooks are skipped.
"""
from __future__ import annotations

import ast
import io
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Set

from torchlint.noqa import noqa_pattern


@dataclass
class NoqaRun:
    added: int = 0  # comments added or codes merged into one
    files: int = 0  # files written
    notes: List[str] = field(default_factory=list)  # for stderr, one line each


def add_noqa(diagnostics: Iterable) -> NoqaRun:
    """Edit every file with findings; ``diagnostics`` are this run's (already without noqa'd ones)."""
    by_file: Dict[str, Dict[int, Set[str]]] = defaultdict(lambda: defaultdict(set))
    for d in diagnostics:
        by_file[d.path][d.line].add(d.code)
    run = NoqaRun()
    for path, lines in by_file.items():
        if path.endswith(".ipynb"):
            run.notes.append(f"{path}: notebook skipped (--add-noqa edits .py files only)")
            continue
        _add_to_file(path, lines, run)
    return run


def _add_to_file(path: str, codes_by_line: Dict[int, Set[str]], run: NoqaRun) -> None:
    from torchlint.fix_files import ChangedWhileFixing, decode_file, write_fixed

    try:
        with open(path, "rb") as fh:
            old = fh.read()
        text, encoding = decode_file(old)
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
        run.notes.append(f"{path}: not edited: {getattr(exc, 'strerror', None) or exc}")
        return
    lines = text.splitlines(keepends=True)
    closed = _lines_that_take_a_comment(text)
    added = 0
    for number, codes in sorted(codes_by_line.items()):
        if number not in closed or number > len(lines):
            run.notes.append(f"{path}:{number}: no noqa comment added: the line ends inside a "
                             f"string or continues with a backslash")
            continue
        lines[number - 1], count = with_noqa(lines[number - 1], sorted(codes))
        added += count
    if not added:
        return
    new = "".join(lines)
    try:
        ast.parse(new, path)
        write_fixed(path, old, new.encode(encoding))
    except (SyntaxError, ValueError, RecursionError) as exc:  # never write a file that no longer parses
        run.notes.append(f"{path}: not edited: it would not parse afterwards ({getattr(exc, 'msg', exc)})")
        return
    except (ChangedWhileFixing, OSError) as exc:
        run.notes.append(f"{path}: not edited: {exc.strerror or exc}")
        return
    run.added += added
    run.files += 1


def with_noqa(line: str, codes: List[str]) -> tuple:
    """(the line with ``codes`` in its noqa comment, how many comments were added or extended)."""
    body = line.rstrip("\r\n")
    ending = line[len(body):]
    match = noqa_pattern().search(body)
    if match is None:
        return f"{body.rstrip()}  # noqa: {', '.join(codes)}{ending}", 1
    listed = match.group("codes")
    if listed is None:  # a bare "# noqa" already silences everything
        return line, 0
    missing = [code for code in codes if code not in listed.replace(",", " ").split()]
    if not missing:
        return line, 0
    # flake8's group takes the separators after the last code too: insert right after that code.
    end = match.start("codes") + len(listed.rstrip(", \t"))
    return f"{body[:end]}, {', '.join(missing)}{body[end:]}{ending}", 1


def _lines_that_take_a_comment(text: str) -> Set[int]:
    """Line numbers whose end is outside any string and not a backslash continuation."""
    open_lines: Set[int] = set()
    fstring_starts: List[int] = []  # Python 3.12+ tokenizes an f-string in parts
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING:
                open_lines.update(range(token.start[0], token.end[0]))
            elif tokenize.tok_name.get(token.type) == "FSTRING_START":
                fstring_starts.append(token.start[0])
            elif tokenize.tok_name.get(token.type) == "FSTRING_END" and fstring_starts:
                open_lines.update(range(fstring_starts.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return set()
    lines = text.splitlines()
    return {
        number for number, line in enumerate(lines, 1)
        if number not in open_lines and not line.rstrip().endswith("\\")
    }
