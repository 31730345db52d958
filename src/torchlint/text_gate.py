"""The first gate, on the text: each rule's ``gate`` regexes, answered mostly by substring tests.

A regex whose branches start with character classes (``[Ll]oader|[Bb]atches|
...``) makes ``re`` try every branch at every position of the file: on the
benchmark corpus the gates cost more than parsing. ``str.__contains__`` scans
the same text about a hundred times faster. So each regex is read once, with
``re``'s own parser, for *anchors*: literal strings of which every match must
contain at least one. A file that holds none of a regex's anchors cannot
match it and is answered without running the regex; an anchor that is a whole
branch of the regex (``autograd`` in ``backward\\s*\\(|autograd``) proves a
match on its own. Only the remaining files run the regex.

The anchors are a shortcut, never a different answer: ``matches`` agrees with
``regex.search`` on every text (tests check this on the corpus and on
generated text). Where the parser is unavailable or a pattern has no useful
anchors, the regex runs as it is.
"""
from __future__ import annotations

import functools
import re
from typing import Callable, FrozenSet, List, NamedTuple, Optional, Tuple

try:  # the parser behind re.compile: re._parser since 3.11, sre_parse before
    from re import _parser as _sre  # type: ignore[attr-defined]  # private, not in typeshed
except ImportError:  # pragma: no cover - Python < 3.11
    try:
        import sre_parse as _sre
    except ImportError:
        _sre = None

_SPACE = r"[\s\\]*"  # spaces and line continuations, where Python allows them


def one_of(names) -> str:
    """A regex matching any of ``names`` (words, no regex syntax in them)."""
    return names[0] if len(names) == 1 else "(?:" + "|".join(names) + ")"


def call_spelling(names, method: bool = False) -> str:
    """A regex every call of one of ``names`` matches: ``x.f(`` (spaced or continued) and,
    unless ``method``, a bare ``f(`` that is neither a ``def`` nor the end of a longer name
    (``save_for_backward(`` is no ``backward(``)."""
    called = one_of(names) + _SPACE + r"\("
    attribute = r"\." + _SPACE + called
    return attribute if method else attribute + r"|(?<![\w.])(?<!def )" + called


# What the model takes for ``backward`` (``training_calls.is_backward``): a method
# ``.backward(``/``.manual_backward(`` or a bare ``backward(`` (imported from
# torch.autograd). Not ``save_for_backward(``, ``lsh_backward (`` or the
# ``def backward(`` of a custom autograd Function, which are most of the
# mentions in model libraries.
BACKWARD_METHODS = ("backward", "manual_backward")
BACKWARD_CALL = call_spelling(BACKWARD_METHODS)
# Code that may compute gradients: a backward, ``autograd.grad``/``grad(``, a vjp.
GRADIENT_CODE = BACKWARD_CALL + r"|\bgrad\s*\(|vjp|torch\.autograd import"

# A call that can switch a module to eval mode (``modes.mode_switch``): ``.eval()``,
# ``.train(False)``, ``.train(0)``, ``.train(mode=False)``, spaced or continued.
EVAL_SWITCH_CALL = (r"\.[\s\\]*eval[\s\\]*\([\s\\]*(?:\)|#)|"
                    r"\.[\s\\]*train[\s\\]*\([\s\\(]*(?:False|0|mode|#)")

_MAX_VARIANTS = 16  # [Ll][Oo]... expands to this many strings at most
_MIN_ANCHOR = 2  # shorter anchors are in nearly every file: not worth a test


class Anchor(NamedTuple):
    text: str  # lower-cased when ``icase``
    icase: bool  # to be looked for in the lower-cased source
    whole: bool  # the anchor is a complete match of the regex by itself


class Candidate(NamedTuple):
    """Strings one of which every match of a piece of pattern contains."""

    anchors: FrozenSet[Anchor]

    def shortest(self) -> int:
        return min(len(a.text) for a in self.anchors)


class Pattern:
    """One gate regex, split at its top-level ``|`` into branches with anchors of their own."""

    def __init__(self, pattern: str) -> None:
        # Inline global flags such as ``(?i)`` belong to the whole pattern: each
        # branch is compiled with them.
        flags = re.compile(pattern).flags & ~re.UNICODE
        pieces = _top_level_branches(pattern, flags) or [pattern]
        branches = [_Branch(p, flags) for p in pieces]
        self.branches = tuple(sorted(branches, key=_Branch.cost))

    def matches(self, source: str, memo: "_FileMemo") -> bool:
        to_run = []
        for branch in self.branches:
            verdict = memo.verdicts.get(branch.key)
            if verdict is None:
                verdict = memo.verdicts[branch.key] = branch.by_anchors(source, memo)
            if verdict is True:
                return True
            if verdict is _UNKNOWN:
                to_run.append(branch)
        for branch in to_run:
            found = memo.verdicts[branch.key] = branch.search(source)
            if found:
                return True
        return False


class _Branch:
    def __init__(self, pattern: str, flags: int) -> None:
        self.regex = re.compile(pattern, flags)
        self.key = (pattern, flags)  # rules share branches (``backward``, ``[Ll]oader``)
        self.anchors: Optional[Tuple[Anchor, ...]] = None
        found = _anchors_of(pattern, flags)
        if found is not None and found.shortest() >= _MIN_ANCHOR:
            self.anchors = tuple(sorted(found.anchors, key=lambda a: (not a.whole, -len(a.text))))
        self.icase = any(a.icase for a in self.anchors or ())
        # ``\bgrad\s*\(`` or ``[Dd]l\b`` give ``re`` no literal to skip ahead
        # to, so it tries the pattern at every position of the file. Where
        # every match starts with one of a few strings, trying it only where
        # those strings occur gives the same answer.
        self.starts = None if flags else _leading_strings(pattern)

    def search(self, source: str) -> bool:
        if self.starts is None:
            return self.regex.search(source) is not None
        match = self.regex.match
        for start in self.starts:
            at = source.find(start)
            while at >= 0:
                if match(source, at):
                    return True
                at = source.find(start, at + 1)
        return False

    def cost(self) -> tuple:
        return (self.anchors is None, not all(a.whole for a in self.anchors or ()))

    def by_anchors(self, source: str, memo: "_FileMemo"):
        """True: matches; False: cannot match; _UNKNOWN: only the regex can tell."""
        if self.anchors is None or (self.icase and not _lowers_like_re(source)):
            return _UNKNOWN
        hit = False
        for anchor in self.anchors:
            if anchor.icase:
                present = anchor.text in memo.lowered(source)
            else:
                present = anchor.text in source
            if present:
                if anchor.whole:
                    return True
                hit = True
        return _UNKNOWN if hit else False


def _lowers_like_re(source: str) -> bool:
    """Whether ``source.lower()`` finds what re.IGNORECASE finds: outside ASCII,
    'ſ' and 'ı' match 's' and 'i' in ``re`` and 'İ' lowers to two characters."""
    return source.isascii() or not any(char in source for char in _CASE_TRAPS)


_CASE_TRAPS = "\u0130\u0131\u017f\u212a"


def _top_level_branches(pattern: str, flags: int) -> List[str]:
    """``a|(b|c)|[|]`` -> ``['a', '(b|c)', '[|]']``: the alternatives of the whole
    pattern, or [] where it has one or the split is not sure. A bar this scanner
    misread (inside a class or a group) leaves a piece with an open bracket,
    which ``re`` refuses; groups are numbered anew in each piece, so patterns
    with back-references stay whole."""
    pieces = _split_at_bars(pattern)
    if len(pieces) < 2 or re.search(r"\\\d|\(\?P=", pattern):
        return []
    try:
        groups = sum(re.compile(piece, flags).groups for piece in pieces)
    except re.error:
        return []
    return pieces if groups == re.compile(pattern, flags).groups else []


def _split_at_bars(pattern: str) -> List[str]:
    pieces, depth, in_class, escaped, start = [], 0, False, False, 0
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]" or pattern[i - 1] == "["
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            pieces.append(pattern[start:i])
            start = i + 1
    pieces.append(pattern[start:])
    return pieces


@functools.lru_cache(maxsize=None)
def compile_gate(patterns: Tuple[str, ...]) -> Tuple[Pattern, ...]:
    """A gate's regexes, read once per process: a rule and the runner's light path
    (which reads the gates from the catalogue) share them."""
    return tuple(Pattern(p) for p in patterns)


def gate_matches(compiled: Tuple[Pattern, ...], source: str,
                 check: Optional[Callable[[str], bool]] = None) -> bool:
    """True when every pattern of a rule's gate matches somewhere in ``source`` and its
    text ``check`` (``Rule.text_check``), if it has one, says yes."""
    memo = _FileMemo.of(source)
    if not all(p.matches(source, memo) for p in compiled):
        return False
    if check is None:
        return True
    verdict = memo.verdicts.get(check)
    if verdict is None:
        verdict = memo.verdicts[check] = bool(check(source))
    return verdict


def text_search(pattern: str):
    """``re.compile(pattern).search`` as a yes/no, with the gates' shortcuts and memo."""
    compiled = (Pattern(pattern),)
    return lambda source: gate_matches(compiled, source)


_KEPT_MEMOS = 3
_UNKNOWN = object()  # an anchor occurs, but only the regex can tell whether it matches


class _FileMemo:
    """What the gates learnt of the file in hand, shared by every rule's gate:
    the engine asks all rules about one source before the next, and the runner's
    light path asks first (on another thread for a big file: the memos are shared
    by all threads; a thread that finds none of its source starts its own). The
    last few texts keep theirs: the engine asks of the code without docstrings and,
    in between, tree gates ask of the whole source."""

    _recent: Tuple["_FileMemo", ...] = ()

    def __init__(self, source: str) -> None:
        self.source = source  # held, so its id cannot be reused while this lives
        self.verdicts: dict = {}
        self._lowered: Optional[str] = None

    @classmethod
    def of(cls, source: str) -> "_FileMemo":
        recent = cls._recent
        for memo in recent:
            if memo.source is source:
                return memo
        memo = cls(source)
        cls._recent = (memo, *recent[:_KEPT_MEMOS - 1])
        return memo

    def lowered(self, source: str) -> str:
        if self._lowered is None:
            self._lowered = source.lower()
        return self._lowered


# --- reading anchors out of re's parse tree -------------------------------------

# Zero-width: ``\b``, ``^``, lookarounds (``match`` at ``pos`` still sees the text before it).
_ZERO_WIDTH = (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT) if _sre is not None else ()


def _leading_strings(pattern: str) -> Optional[Tuple[str, ...]]:
    """The strings every match begins with, for patterns that do not begin with a
    literal (zero-width assertions first are fine: ``match`` sees the text before
    ``pos``); None when there are none, or ``re`` already skips ahead by itself."""
    if _sre is None:
        return None
    try:
        items = list(_sre.parse(pattern))
    except Exception:
        return None
    if not items or items[0][0] == _sre.LITERAL:
        return None
    run = {""}
    for op, arg in items:
        if op in _ZERO_WIDTH and run == {""}:
            continue
        strings = _literal_strings(op, arg, False) or _literal_alternatives(op, arg)
        if strings is None or len(run) * len(strings) > _MAX_VARIANTS:
            break
        run = {a + b for a in run for b in strings}
    if min(len(s) for s in run) < _MIN_ANCHOR:
        return None
    return tuple(sorted(run))


def _anchors_of(pattern: str, flags: int = 0) -> Optional[Candidate]:
    if _sre is None:
        return None
    try:
        parsed = _sre.parse(pattern, flags)
        state = getattr(parsed, "state", None) or parsed.pattern  # named pattern before 3.11
        flags = state.flags
    except Exception:  # an internal API: any surprise means "just run the regex"
        return None
    if flags & (re.VERBOSE | re.LOCALE):
        return None
    try:
        return _sequence(list(parsed), bool(flags & re.IGNORECASE))
    except Exception:
        return None


def _sequence(items: list, icase: bool) -> Optional[Candidate]:
    """The best candidate of a sequence: a run of literals, or one required element."""
    candidates: List[Candidate] = []
    run = {""}
    whole = True  # every item so far extended the literal run
    for op, arg in items:
        if op in _ZERO_WIDTH:  # the literals on both sides stay adjacent
            whole = False
            continue
        strings = _literal_strings(op, arg, icase)
        if strings is not None and len(run) * len(strings) <= _MAX_VARIANTS:
            run = {a + b for a in run for b in strings}
            continue
        whole = False
        _close_run(run, icase, candidates)
        run = {""} if strings is None else set(strings)
        inner = _element(op, arg, icase)
        if inner is not None:
            candidates.append(inner)
    if whole and all(run):
        return Candidate(frozenset(Anchor(s, icase, True) for s in run))
    _close_run(run, icase, candidates)
    if not candidates:
        return None
    best = max(candidates, key=lambda c: (c.shortest(), -len(c.anchors)))
    if len(items) == 1 and op == _sre.BRANCH:
        return best  # a bare alternation keeps its branches' wholeness
    return Candidate(frozenset(a._replace(whole=False) for a in best.anchors))


def _close_run(run: set, icase: bool, candidates: list) -> None:
    if all(run):
        candidates.append(Candidate(frozenset(Anchor(s, icase, False) for s in run)))


def _literal_strings(op, arg, icase: bool) -> Optional[List[str]]:
    """The strings one element matches, when it is a literal or a small class of them."""
    if op == _sre.LITERAL:
        char = chr(arg)
        return [char.lower() if icase else char]
    if op == _sre.IN and arg and all(o == _sre.LITERAL for o, _ in arg):
        chars = {chr(c).lower() if icase else chr(c) for _, c in arg}
        return sorted(chars) if len(chars) <= _MAX_VARIANTS else None
    return None


def _literal_alternatives(op, arg) -> Optional[List[str]]:
    """The words of a group of literal alternatives, ``(?:solve|lstsq|eig)``: so that
    ``\\b(?:solve|eig)\\b`` is tried only where one of them is, not at every position."""
    if op == _sre.SUBPATTERN and not (arg[1] or arg[2]):  # a capturing group: (solve|eig)
        body = list(arg[3])
        if len(body) != 1:
            return None
        op, arg = body[0]
    if op != _sre.BRANCH:  # ``re`` inlines (?:solve|eig) as a bare branch
        return None
    words = []
    for branch in arg[1]:
        items = list(branch)
        if not items or any(o != _sre.LITERAL for o, _ in items):
            return None
        words.append("".join(chr(c) for _, c in items))
    return words


def _element(op, arg, icase: bool) -> Optional[Candidate]:
    """What a non-literal element contributes: its own candidate, if every match needs one."""
    if op == _sre.BRANCH:
        branches = [_sequence(list(b), icase) for b in arg[1]]
        anchors = [b.anchors for b in branches if b is not None]
        if len(anchors) < len(branches):
            return None
        return Candidate(frozenset().union(*anchors))
    if op == _sre.SUBPATTERN:
        add_flags, del_flags, body = arg[1], arg[2], arg[3]
        if (add_flags | del_flags) & ~re.IGNORECASE:
            return None
        inner_icase = (icase or bool(add_flags & re.IGNORECASE)) and not del_flags & re.IGNORECASE
        found = _sequence(list(body), inner_icase)
        return found if found is None or len(body) == 1 else Candidate(
            frozenset(a._replace(whole=False) for a in found.anchors))
    if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and arg[0] >= 1:
        found = _sequence(list(arg[2]), icase)
        return None if found is None else Candidate(frozenset(a._replace(whole=False) for a in found.anchors))
    return None
