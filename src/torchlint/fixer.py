"""The fix loop: apply the fixes rules offer to a text, and prove each one.

For one text:

1. lint it on the engine's own path (``engine.lint_module``, the same rules,
   gates, positions and ``# noqa`` as ``torchlint check``) and keep the
   findings whose fix is allowed (safe, plus unsafe with ``--unsafe-fixes``);
2. pick fixes whose edited nodes do not overlap (an edit inside another
   fix's node waits for the next pass) and apply them with
   ``edits.apply_edits``, adding ``import torch`` where a fix needs it;
3. re-parse the new text and lint it again: every applied fix's finding must
   be gone and no finding may appear that was not there before. A batch that
   fails is retried one fix at a time; a fix that fails alone is dropped and
   reported, never kept;
4. repeat (at most ``MAX_PASSES`` times) until no fix applies.

Every entry point runs with the engine's stack protection (``with_room``),
whatever the input: a file, stdin, a notebook's cells or an editor buffer.
Reading, writing and diffing files is the front end's (``fix_files.py``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Dict, Iterable, List, Optional, Tuple

import libcst as cst

from torchlint.cst_parse import parse_source
from torchlint.diagnostic import Applicability, Diagnostic, FileError, FileResult
from torchlint.diagnostic import allowed_fixes  # noqa: F401 (callers import it here)
from torchlint.edits import FixError, add_imports, apply_edits, parents_of
from torchlint.engine import lint_module, with_room
from torchlint.request import LintRequest
from torchlint.safe_io import raise_hidden_interrupt

MAX_PASSES = 10


@dataclass
class FixOutcome:
    """What fixing one text did: the new text (or None) and which fixes went in or were refused.

    ``remaining``: where the text changed, the findings on the new text, from the fix loop's
    last lint of it (what ``torchlint check`` reports there), so that nobody lints it again.
    """

    text: Optional[str] = None
    applied: List[Tuple[str, str]] = field(default_factory=list)  # (code, description)
    rejected: List[Tuple[str, int, str]] = field(default_factory=list)  # (code, line, reason)
    remaining: Optional[FileResult] = None


def fix_text(text: str, path: str, request: LintRequest, allowed: Iterable[str] = (Applicability.SAFE,),
             only: Optional[Iterable[str]] = None, at: Optional[Tuple[int, int]] = None) -> FixOutcome:
    """Apply every allowed fix the request's rules offer for ``text``; ``outcome.text`` is None when
    nothing changed.

    Every rule of ``request`` checks the result, with its target torch version and, where it
    enables TL010, that check and its fix too; ``only`` (codes) limits which rules' fixes
    apply, and ``at`` (1-based line and column in ``text``, as reported) to the one finding
    there, an editor's fix for one diagnostic: lines move once it is in, so it is the last.
    """
    allowed = frozenset(Applicability(a) for a in allowed)
    only = frozenset(only) if only is not None else None
    return with_room(len(text), _fix_text, text, _Checking(path, request), allowed, only, at)


@dataclass(frozen=True)
class _Checking:
    """How every pass lints: the file's path and request, as the check did."""
    path: str
    request: LintRequest


def _fix_text(text: str, checking: _Checking, allowed: frozenset, only,
              at: Optional[Tuple[int, int]] = None) -> FixOutcome:
    outcome = FixOutcome()
    try:
        module = parse_source(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return outcome
    # libcst prints back what it read, except a final lone-CR line end, which it
    # drops: put that back at the end. Any other difference means a rewrite could
    # change code no fix touched, so nothing is fixed.
    if not text.startswith(module.code) or text[len(module.code):] not in ("", "\r"):
        outcome.rejected.append(("TL001", 1, "libcst does not print this file back as it reads; not fixed"))
        return outcome
    tail = text[len(module.code):]
    current = module.code
    refused: set = set()
    found, errors = _lint(module, current, checking)
    for _ in range(MAX_PASSES):
        lines = current.splitlines()
        candidates = [d for d in found if d.edit is not None and d.fix in allowed
                      and _key(d, lines) not in refused and (only is None or d.code in only)
                      and (at is None or (d.line, d.col) == at)]
        if not candidates:
            break
        batch = _choose(module, candidates)
        try:
            module, current, found, errors = _verify(module, found, batch, checking)
            outcome.applied.extend((d.code, d.edit.description) for d in batch)
            if at is not None:
                break
            continue
        except (FixError, RecursionError):
            pass
        # Something in the batch is wrong: try its fixes one at a time; refuse the
        # ones that fail alone, apply the first good one, and look again.
        for d in batch:
            try:
                module, after_text, found_now, errors = _verify(module, found, [d], checking)
            except (FixError, RecursionError) as exc:
                refused.add(_key(d, lines))
                outcome.rejected.append((d.code, d.line, str(exc)))
                continue
            current, found = after_text, found_now
            outcome.applied.append((d.code, d.edit.description))
            break  # the remaining fixes point into the old tree; the next pass rebuilds them
        if at is not None and outcome.applied:
            break
    current += tail
    if current != text:
        outcome.text = current
        # The last pass linted exactly this text (the tail is a final line end): its findings are
        # the check's, without the fixes' tree edits.
        outcome.remaining = FileResult(checking.path, diagnostics=[replace(d, edit=None) for d in found],
                                       errors=errors)
    return outcome


def _lint(module: cst.Module, text: str, checking: _Checking) -> Tuple[List[Diagnostic], List[FileError]]:
    """The findings ``torchlint check`` reports on this tree, each with its fix's edits, and the
    errors met (a rule that raised: it offers no fix)."""
    request = checking.request
    applicable = [rule for rule in request.rules if rule.may_apply(text)]
    return lint_module(module, text, checking.path, applicable, keep_edits=True, **request.engine_options)


def _key(d: Diagnostic, lines: List[str]) -> tuple:
    """A finding's identity across passes, where line numbers shift: its code and line's text."""
    return d.code, (lines[d.line - 1] if d.line <= len(lines) else "").strip()


def _edit_nodes(d: Diagnostic) -> List[cst.CSTNode]:
    return [old for old, _ in d.edit.edits]


def _choose(module: cst.Module, candidates: List[Diagnostic]) -> List[Diagnostic]:
    """Fixes whose edited nodes neither contain nor lie inside another chosen fix's nodes."""
    if len(candidates) < 2:
        return candidates
    parents = parents_of(module)

    def chain(node):
        out = [id(node)]
        parent = parents.get(id(node))
        while parent is not None:
            out.append(id(parent))
            parent = parents.get(id(parent))
        return out

    taken: set = set()  # edited nodes of chosen fixes
    covered: set = set()  # those nodes and all their ancestors
    chosen, seen = [], set()
    for d in candidates:
        nodes = _edit_nodes(d)
        signature = tuple(id(n) for n in nodes)
        if signature in seen:
            continue  # two findings, one repair
        chains = [chain(n) for n in nodes]
        if any(c[0] in covered or any(i in taken for i in c) for c in chains):
            continue
        seen.add(signature)
        chosen.append(d)
        for c in chains:
            taken.add(c[0])
            covered.update(c)
    return chosen


def _apply(module: cst.Module, batch: List[Diagnostic]) -> Tuple[cst.Module, List[List[cst.CSTNode]]]:
    edits: Dict[int, object] = {}
    inserted: List[List[cst.CSTNode]] = []
    imports = []
    for d in batch:
        mine: List[cst.CSTNode] = []
        for old, new in d.edit.edits:
            if id(old) in edits:
                raise FixError("two edits of one node")
            edits[id(old)] = new
            if isinstance(new, cst.FlattenSentinel):
                mine.extend(new.nodes)
            elif isinstance(new, cst.CSTNode):
                mine.append(new)
        inserted.append(mine)
        imports.extend(d.edit.imports)
    new_module = apply_edits(module, edits)
    new_module = add_imports(new_module, imports)
    return new_module, inserted


def _verify(module, before, batch, checking: _Checking):
    """Apply ``batch``; return (new module, new text, findings) or raise FixError saying why not."""
    from torchlint.positions import node_positions

    new_module, inserted = _apply(module, batch)
    text = new_module.code
    try:
        parsed = parse_source(text)
    except cst.ParserSyntaxError as exc:
        raise FixError(f"the fixed code does not parse ({exc.message})") from exc
    after, errors = _lint(parsed, text, checking)
    old_counts = Counter(d.code for d in before)
    new_counts = Counter(d.code for d in after)
    fixed = Counter(d.code for d in batch)
    for code, count in new_counts.items():
        if count > old_counts[code] - fixed[code]:
            if code in fixed and count >= old_counts[code]:
                raise FixError(f"{code} is still reported after the fix")
            raise FixError(f"the fix would add a {code} finding")
    if any(nodes for nodes in inserted):
        try:
            positions = node_positions(new_module, [n for nodes in inserted for n in nodes])
        except Exception as exc:  # a node shared twice: positions are only a check, counts still hold
            raise_hidden_interrupt(exc)
            positions = {}
        for d, nodes in zip(batch, inserted):
            spans = [positions[id(n)] for n in nodes if id(n) in positions]
            for f in after:
                if f.code == d.code and any(s.start.line <= f.line <= s.end.line for s in spans):
                    raise FixError(f"{d.code} is still reported where the fix changed the code")
    return parsed, text, after, errors


def fix_source(source: str, path: str, request: LintRequest, codes: Iterable[str], unsafe: bool = False,
               at: Optional[Tuple[int, int]] = None) -> str:
    """The language server's quick fix: ``source`` with the fixes of ``codes`` applied
    (only the finding at ``at``, 1-based line and column, when given).

    The rules the file is linted for (``request``, as ``--fix`` uses) and those of
    ``codes`` check the result; the text comes back unchanged when nothing applies.
    """
    codes = frozenset(codes)
    checking = request.with_codes(request.codes | codes)
    outcome = fix_text(source, path, checking, allowed_fixes(unsafe), only=codes, at=at)
    return outcome.text if outcome.text is not None else source
