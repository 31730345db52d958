"""``# noqa`` and ``# noqa: TL301,TL302`` comments, read exactly as flake8 reads them.

flake8 applies its own noqa to the plugin's findings, so the CLI and the
language server must agree with it to the letter: flake8's own pattern, the
first ``# noqa`` on the line only (``# noqa: E501  # noqa: TL301`` silences
E501 alone), and codes compared as written (``# NOQA: tl301`` silences
nothing; ``noqa`` itself may be in any case).

Also read here, for the engine: the file exemption ``# torchlint: noqa[: codes]``
(which flake8 does not know), for TL010, the TL codes that suppressed nothing, and for
TL011, the TorchFix codes a torchlint code answers.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Collection, Dict, Iterable, Iterator, List, Mapping, Optional, Pattern, Tuple

_SEPARATORS = re.compile(r"[,\s]+")
_pattern: Optional[Pattern] = None


def noqa_pattern() -> Pattern:
    """flake8's inline-noqa regular expression (imported on first use: most lines have none)."""
    global _pattern
    if _pattern is None:
        from flake8.defaults import NOQA_INLINE_REGEXP

        _pattern = NOQA_INLINE_REGEXP
    return _pattern


def suppressed(line: str, code: str) -> bool:
    if "noqa" not in line.lower():
        return False
    match = noqa_pattern().search(line)
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    listed = tuple(c for c in _SEPARATORS.split(codes) if c)
    return code.startswith(listed)


# ``# torchlint: noqa`` / ``# torchlint: noqa: TL301,TL302`` alone on a line: the
# whole file (ruff's ``# ruff: noqa``). Only comments count, never string text.
_FILE_EXEMPTION = re.compile(
    r"#\s*torchlint\s*:\s*noqa(?:\s*:\s*(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?\s*$",
    re.IGNORECASE,
)
_EVERYTHING = ("",)  # every code starts with ""


def _comments(source: str) -> Iterator[Tuple[int, str, bool]]:
    """(line, text, alone on its line) of each comment; none when the source does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    for token in tokens:
        if token.type == tokenize.COMMENT:
            alone = not token.line[:token.start[1]].strip()
            yield token.start[0], token.string, alone


def file_exemption(source: str) -> Tuple[str, ...]:
    """The code prefixes a file exempts itself from: ``("",)`` for all, ``()`` for none."""
    lowered = source.lower()
    if "torchlint" not in lowered or "noqa" not in lowered:
        return ()
    exempt: Tuple[str, ...] = ()
    for _, text, alone in _comments(source):
        match = _FILE_EXEMPTION.fullmatch(text) if alone else None
        if match is None:
            continue
        codes = match.group("codes")
        if codes is None:
            return _EVERYTHING
        exempt += tuple(c.upper() for c in _SEPARATORS.split(codes) if c)
    return exempt


@dataclass(frozen=True)
class UnusedCode:
    """A TL code in a line's ``# noqa:`` that is not a known code, or suppressed nothing."""
    line: int
    col: int  # 1-based column of the comment
    code: str
    unknown: bool


def unused_codes(source: str, found: Iterable[Tuple[int, str]], known: Collection[str],
                 exempt_from_judging: str) -> List[UnusedCode]:
    """The TL codes of ``# noqa:`` comments that suppressed none of ``found``
    ((line, code) before line noqa). Read as ``suppressed`` reads them: flake8's
    pattern, first match on the physical line, codes compared as written. Other
    tools' codes and a bare ``# noqa`` are not ours to judge; nor is a code
    that covers ``exempt_from_judging`` (TL010 itself: it silences this report)."""
    codes_on: dict = {}
    for line, code in found:
        codes_on.setdefault(line, set()).add(code)
    out = []
    # Only lines with a real comment: "# noqa" inside a string is not a directive to judge.
    for line, col, codes in noqa_lists(source):
        for code in codes:
            if not code.startswith("TL") or exempt_from_judging.startswith(code):
                continue
            unknown = not any(k.startswith(code) for k in known)
            if unknown or not any(c.startswith(code) for c in codes_on.get(line, ())):
                out.append(UnusedCode(line, col, code, unknown))
    return out


def comment_texts(source: str) -> List[Tuple[int, str]]:
    """(line, text) of every comment, in source order (for matching libcst's Comment nodes)."""
    return [(line, text) for line, text, _ in _comments(source)]


def without_codes(comment: str, unused: Collection[str]) -> Optional[str]:
    """The comment with ``unused`` codes dropped from its ``# noqa:`` list; ``""`` when
    nothing of the comment remains; None when the comment holds no ``# noqa:`` list
    (the line's noqa was text before it, in a string)."""
    match = noqa_pattern().search(comment)
    if match is None or match.group("codes") is None:
        return None
    listed = match.group("codes")
    kept = [c for c in _SEPARATORS.split(listed) if c and c not in unused]
    rest = comment[match.end("codes"):]
    if kept:
        trailing = listed[len(listed.rstrip(", \t")):] if rest else ""
        return comment[:match.start("codes")] + ", ".join(kept) + trailing + rest
    before = comment[:match.start()].rstrip()
    if not rest.strip():
        return before
    # "# noqa: TL301 because ...": the reason stays a comment of its own
    return f"{before}  # {rest.strip()}" if before else f"# {rest.strip()}"


@dataclass(frozen=True)
class ForeignCode:
    """A code of another tool in a line's ``# noqa:`` list that torchlint codes answer."""
    line: int
    col: int  # 1-based column of the comment
    code: str
    answers: Tuple[str, ...]


def noqa_lists(source: str) -> Iterator[Tuple[int, int, List[str]]]:
    """(line, 1-based column of the match, codes) of every real comment's ``# noqa:`` list,
    read as ``suppressed`` reads it (first match on the physical line)."""
    if "noqa" not in source.lower():
        return
    lines = source.splitlines()
    for line in sorted({line for line, _, _ in _comments(source)}):
        match = noqa_pattern().search(lines[line - 1]) if line <= len(lines) else None
        if match is not None and match.group("codes") is not None:
            yield line, match.start() + 1, [c for c in _SEPARATORS.split(match.group("codes")) if c]


def answered_codes(source: str, answers: Mapping[str, Tuple[str, ...]]) -> List[ForeignCode]:
    """The codes of ``# noqa:`` lists that ``answers`` maps to torchlint codes (TL011)."""
    return [ForeignCode(line, col, code, answers[code]) for line, col, codes in noqa_lists(source)
            for code in codes if answers.get(code)]


def with_codes_replaced(comment: str, replacements: Dict[str, Tuple[str, ...]]) -> Optional[str]:
    """The comment with each code of ``replacements`` in its ``# noqa:`` list replaced by its
    codes, none twice (``# noqa: TOR102, E501`` -> ``# noqa: TL507, E501``); None when the
    comment holds no such list."""
    match = noqa_pattern().search(comment)
    if match is None or match.group("codes") is None:
        return None
    listed = match.group("codes")
    codes: List[str] = []
    for code in (c for c in _SEPARATORS.split(listed) if c):
        for new in replacements.get(code, (code,)):
            if new not in codes:
                codes.append(new)
    rest = comment[match.end("codes"):]
    trailing = listed[len(listed.rstrip(", \t")):] if rest else ""
    return comment[:match.start("codes")] + ", ".join(codes) + trailing + rest
