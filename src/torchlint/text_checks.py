"""Questions some rules' gates answer from the text alone, after their regexes match.

A check here is exact for what it asks (no tree needed), so a file it turns down never
reaches Python's parser for that rule: ``Rule.text_check`` names it, the generated
catalogue carries its name, and the runner's light path asks it without importing
libcst or the rules. Each returns whether the rule may find something in ``source``.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator, Optional

# Word forms of the two names, after lower-casing and dropping underscores.
_GRAD_SUFFIX = re.compile(r"([a-z]+?)(?:grad|grads|gradient|gradients)")
_REQUIRES_FORMS = frozenset(("require", "requires", "required", "requiring"))
_RETAIN_FORMS = frozenset(("retain", "retains", "retained", "retaining"))
# Real attributes: ``requires_grad`` is the flag; assigning ``retains_grad``,
# ``grad_fn`` or ``is_leaf`` raises (read-only), so no typo of theirs goes unnoticed.
_REAL = frozenset(("requires_grad", "retains_grad"))
# Only names that keep ``grad`` or ``requi`` (in one of the usual cases) are looked at.
_HINTS = ("grad", "Grad", "GRAD", "requi", "Requi", "REQUI")
GRAD_ATTRIBUTE_HINT = "(?:" + "|".join(_HINTS) + ")"
_SPACE = " \t\r\n\\"


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _assigned_hinted_names(source: str) -> Iterator[str]:
    """Each attribute name holding a hint that the text assigns (``x.name =``, ``x.name, y.name =``,
    ``x.name: bool =``, ``[x.name] =``). ``str.find`` for the hints and a look either side:
    a regex starting with six alternatives scans a notebook's outputs far slower."""
    seen = set()
    for hint in _HINTS:
        at = source.find(hint)
        while at >= 0:
            start, end = at, at + len(hint)
            while start > 0 and _is_word(source[start - 1]):
                start -= 1
            while end < len(source) and _is_word(source[end]):
                end += 1
            if start not in seen and _is_assigned_attribute(source, start, end):
                seen.add(start)
                yield source[start:end]
            at = source.find(hint, end)


def _is_assigned_attribute(source: str, start: int, end: int) -> bool:
    before = start - 1
    while before >= 0 and source[before] in _SPACE:
        before -= 1
    if before < 0 or source[before] != ".":
        return False
    after = end
    while after < len(source) and source[after] in _SPACE:
        after += 1
    follows = source[after:after + 2]
    return follows[:1] in (",", ":", ")", "]") or (follows[:1] == "=" and follows != "==")


def _osa(a: str, b: str) -> int:
    """Edit distance counting a swap of neighbours as one edit (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


@lru_cache(maxsize=1024)
def intended_attribute(name: str) -> Optional[str]:
    """``requires_grad`` for ``require_grad``, ``requires_grads``, ``requiresGrad``,
    ``requires_gradient``, ``requires_grad_`` (the method's name) and one-typo spellings
    (``reqiures_grad``); ``retain_grad`` for ``retain_grad`` itself (a method, not a
    flag) and its word forms. None for real and private names and everything else."""
    if name in _REAL or name.startswith("_") or not re.search(GRAD_ATTRIBUTE_HINT, name):
        return None
    flat = name.lower().replace("_", "")
    match = _GRAD_SUFFIX.fullmatch(flat)
    if match is not None:
        stem = match.group(1)
        if stem in _REQUIRES_FORMS or min(_osa(stem, "requires"), _osa(stem, "require")) <= 1:
            return "requires_grad"
        if stem in _RETAIN_FORMS:
            return "retain_grad"
    if _osa(flat, "requiresgrad") <= 1:  # a typo inside "grad": requires_gard
        return "requires_grad"
    return None


def assigns_misspelled_grad_attribute(source: str) -> bool:
    """TL506: does the text assign an attribute whose name is a misspelled autograd flag?"""
    return any(map(intended_attribute, _assigned_hinted_names(source)))


# TL505: ``X.data[0]`` and what ``legacy_data_index``'s tree gate looks through between the
# two (``X.data.cpu().numpy()[0]``). Between the pieces: spaces, line continuations, closing
# brackets (``(x.data)[0]``) and comments. A comment runs to its line's end (``(?![^\n])``):
# a regex that could end it early would try every split of a ``#####`` line, without end.
PASSED_THROUGH = ("cpu", "cuda", "detach", "numpy", "clone")
_COMMENT = r"#[^\n]*(?![^\n])"
_DATA = re.compile(r"\.(?:[ \t\r\n\f\\]|{})*data\b".format(_COMMENT))
_GAP = re.compile(r"(?:[ \t\r\n\f\\)]|{})*".format(_COMMENT))
_STEP = re.compile(r"\.(?:[ \t\r\n\f\\]|{})*(?:{})\b".format(_COMMENT, "|".join(PASSED_THROUGH)))
_ZERO_INDEX = re.compile(r"\[\s*0\s*\]")


def _after_gap(source: str, at: int) -> int:
    gap = _GAP.match(source, at)
    assert gap is not None  # _GAP matches the empty string too
    return gap.end()


def indexes_data_with_zero(source: str) -> bool:
    """TL505: may the text index ``.data`` (or a copy of it) with ``[0]``? Walked from each
    ``.data``: steps, each a call whose brackets are skipped whole, then ``[0]``."""
    for found in _DATA.finditer(source):
        at = _after_gap(source, found.end())
        while True:
            if _ZERO_INDEX.match(source, at):
                return True
            step = _STEP.match(source, at)
            if step is None:
                break
            at = _after_gap(source, step.end())
            if source[at:at + 1] != "(":
                break
            at = _after_brackets(source, at)
            if at < 0:
                return True  # a string or an unclosed bracket in the call: cannot tell
            at = _after_gap(source, at)
    return False


def _after_brackets(source: str, at: int) -> int:
    """The index after the ``)`` closing the ``(`` at ``at``; -1 where a quote or a comment
    inside (which may hold brackets) or the end of the text leaves it unsure."""
    depth = 0
    for index in range(at, len(source)):
        char = source[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index + 1
        elif char in "\"'#":
            return -1
    return -1
