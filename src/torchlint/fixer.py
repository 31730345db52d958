"""Automatic fixes: ``torchlint check --fix``, ``--unsafe-fixes`` and ``--diff``.

Rules describe a repair as a :class:`torchlint.rule.Fix`: node replacements in
the tree they were given. This module has two halves.

*Building fixes* (used by rule modules): where torch is bound in the file
(:func:`torch_reference`), which statement holds a node
(:func:`enclosing_statement`), and small constructors for the edits the rules
need (wrap in ``with``, insert a statement before another, call a method on an
expression, drop a keyword argument).

*Applying fixes* (used by the CLI). For one file:

1. parse once, run the selected rules, keep the findings whose fix is allowed
   (``safe``, plus ``unsafe`` with ``--unsafe-fixes``) and not silenced by
   ``# noqa``;
2. pick fixes whose edited nodes do not overlap (an edit inside another
   fix's node waits for the next pass), rebuild only the path from the module
   to each edited node, and add ``import torch`` where a fix needs it and the
   file does not bind it at top level;
3. re-parse the new text and lint it again: every applied fix's finding must
   be gone and no finding may appear that was not there before. A batch that
   fails is retried one fix at a time; a fix that fails alone is dropped and
   reported, never written;
4. repeat (at most ``MAX_PASSES`` times) until no fix applies.

Text is decoded the way Python reads it and encoded back the same way: a
UTF-8 byte-order mark, a ``# -*- coding`` declaration and CRLF line endings
survive. Files are written atomically (a temporary file in the same folder,
the original's permission bits, fsync, ``os.replace``) and only when they
changed. This module never imports torch.
"""
from __future__ import annotations

import dataclasses
import io
import os
import tokenize
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from torchlint.model.expr import dotted
from torchlint.model.names import from_import_bindings
from torchlint.model.walk import walk

SAFE, UNSAFE = "safe", "unsafe"
MAX_PASSES = 10


class FixError(Exception):
    """A fix that cannot be applied to the tree it was built for."""


# ---------------------------------------------------------------------------
# Building fixes: helpers for rule modules
# ---------------------------------------------------------------------------

def parent_map(model) -> Dict[int, cst.CSTNode]:
    """``id(node) -> parent`` for every syntax node of the model's module, built once per model."""
    cache = model.__dict__.get("_fix_parents")
    if cache is None:
        cache = _parents(model.module)
        model.__dict__["_fix_parents"] = cache
    return cache


def _parents(module: cst.Module) -> Dict[int, cst.CSTNode]:
    parents: Dict[int, cst.CSTNode] = {}
    stack: List[cst.CSTNode] = []

    def enter(node):
        if stack:
            parents[id(node)] = stack[-1]
        stack.append(node)

    def leave(node):
        stack.pop()

    walk(module, enter, leave)
    return parents


def enclosing_statement(model, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
    """The statement of a block (module or indented body) that holds ``node``.

    ``None`` for a node in a one-line suite (``if x: f()``), where no
    statement can be wrapped or inserted without rewriting the suite.
    """
    parents = parent_map(model)
    while node is not None:
        parent = parents.get(id(node))
        if isinstance(node, cst.BaseStatement) and isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return node
        if isinstance(parent, cst.SimpleStatementSuite):
            return None
        node = parent
    return None


def top_level_imports(module: cst.Module) -> List[cst.CSTNode]:
    """``import``/``from`` statements at module level, including inside top-level ``if``/``try``."""
    found: List[cst.CSTNode] = []

    def scan(body):
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                found.extend(s for s in stmt.body if isinstance(s, (cst.Import, cst.ImportFrom)))
            elif isinstance(stmt, (cst.If, cst.Try)):
                scan(stmt.body.body)
                if isinstance(stmt, cst.Try):
                    for handler in stmt.handlers:
                        scan(handler.body.body)

    scan(module.body)
    return found


def module_bindings(module: cst.Module) -> Dict[str, str]:
    """Top-level names bound by imports: ``{"T": "torch", "nn": "torch.nn", "torch": "torch"}``.

    ``import torch.nn`` binds ``torch`` (to ``torch``); relative imports are left out.
    """
    names: Dict[str, str] = {}
    for stmt in top_level_imports(module):
        if isinstance(stmt, cst.Import):
            for alias in stmt.names:
                path = dotted(alias.name)
                if path is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    names[alias.asname.name.value] = path
                else:
                    root = path.split(".", 1)[0]
                    names.setdefault(root, root)
        elif not stmt.relative and stmt.module is not None and not isinstance(stmt.names, cst.ImportStar):
            base = dotted(stmt.module)
            if base is not None:
                names.update(from_import_bindings(stmt, base))
    return names


def torch_reference(model, attr: str = "") -> Tuple[str, Tuple[str, ...]]:
    """How generated code in this file should name ``torch.<attr>``, and the imports it needs.

    ``import torch as T`` gives ``("T.no_grad", ())``; ``from torch import
    no_grad`` gives ``("no_grad", ())``; a file without a top-level torch
    binding gives ``("torch.no_grad", ("torch",))`` and the fixer adds
    ``import torch``.
    """
    cache = model.__dict__.setdefault("_fix_bindings", {})
    bindings = cache.get("names")
    if bindings is None:
        bindings = cache["names"] = module_bindings(model.module)
    target = f"torch.{attr}" if attr else "torch"
    if bindings.get("torch") == "torch":
        return target, ()
    if attr:
        for local, path in sorted(bindings.items()):
            if path == target:
                return local, ()
    for local, path in sorted(bindings.items()):
        if path == "torch":
            return (f"{local}.{attr}" if attr else local), ()
    return target, ("torch",)


def wrap_in_with(stmt: cst.BaseStatement, context: str) -> cst.With:
    """``with <context>:`` around ``stmt``; comments above ``stmt`` stay above the ``with``."""
    inner = stmt.with_changes(leading_lines=())
    return cst.With(
        items=[cst.WithItem(item=cst.parse_expression(context))],
        body=cst.IndentedBlock(body=[inner]),
        leading_lines=stmt.leading_lines,
    )


def insert_before(stmt: cst.CSTNode, *codes: str) -> cst.FlattenSentinel:
    """Simple statements (``codes``) placed just before ``stmt``, which keeps its comments.

    ``stmt`` may be a statement of a block or a small statement of a one-line suite.
    """
    lines = [cst.parse_statement(code) for code in codes]
    if isinstance(stmt, cst.BaseSmallStatement):
        smalls = [line.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for line in lines]
        return cst.FlattenSentinel([*smalls, stmt])
    return cst.FlattenSentinel([*lines, stmt])


def source_of(node: cst.CSTNode) -> str:
    """The code of one node, for fix descriptions."""
    return cst.Module(body=()).code_for_node(node)


def first_statement(body: cst.BaseSuite) -> Optional[cst.CSTNode]:
    """The first statement of a block body (a small statement for a one-line suite)."""
    return body.body[0] if body.body else None


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def method_call(expr: cst.BaseExpression, method: str) -> cst.Call:
    """``expr.method()``, parenthesising ``expr`` where precedence needs it (``(a + b).detach()``)."""
    if not isinstance(expr, _ATOMS) and not expr.lpar:
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name(method)))


def without_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """``call`` with ``arg`` removed, commas tidied: ``f(a, k=True)`` -> ``f(a)``."""
    args = [a for a in call.args if a is not arg]
    if len(args) == len(call.args):
        raise FixError("argument not in call")
    if not args:
        return call.with_changes(args=(), whitespace_before_args=cst.SimpleWhitespace(""))
    if call.args[-1] is arg:  # the new last argument takes the removed one's trailing comma
        args[-1] = args[-1].with_changes(comma=arg.comma)
    return call.with_changes(args=args)


def suspends(node: cst.CSTNode) -> bool:
    """Does ``node`` hold a ``yield`` or ``await`` of its own function (not of nested defs)?

    A ``with torch.no_grad()`` around one would leave grad mode off in the
    caller while the generator or coroutine is suspended.
    """
    found = []
    skip = []

    def enter(n):
        if skip:
            skip.append(n)
            return
        if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and n is not node:
            skip.append(n)
        elif isinstance(n, (cst.Yield, cst.Await)):
            found.append(n)

    def leave(n):
        if skip and skip[-1] is n:
            skip.pop()

    walk(node, enter, leave)
    return bool(found)


# ---------------------------------------------------------------------------
# Applying fixes
# ---------------------------------------------------------------------------

@dataclass
class _Found:
    code: str
    line: int
    end_line: int
    fix: object  # torchlint.rule.Fix or None
    safety: str
    key: tuple


@dataclass
class FixOutcome:
    """What fixing one text did: the new text (or None) and which fixes went in or were refused."""

    text: Optional[str] = None
    applied: List[Tuple[str, str]] = field(default_factory=list)  # (code, description)
    rejected: List[Tuple[str, int, str]] = field(default_factory=list)  # (code, line, reason)


def _lint(module: cst.Module, text: str, path: str, rules: Sequence[type]) -> List[_Found]:
    from torchlint.model import FileModel
    from torchlint.noqa import suppressed
    from torchlint.positions import node_positions

    model = FileModel(module, path)
    findings = []
    for rule in rules:
        if not rule.may_apply(text):
            continue
        try:
            findings.extend((rule, f) for f in rule().check(model))
        except Exception:  # the check run reports it; fixing goes on with the others
            continue
    if not findings:
        return []
    positions = node_positions(module, [f.node for _, f in findings])
    lines = text.splitlines()
    out = []
    for rule, f in findings:
        pos = positions.get(id(f.node))
        if pos is None:
            continue
        line = pos.start.line
        source_line = lines[line - 1] if line <= len(lines) else ""
        if suppressed(source_line, f.code):
            continue
        safety = rule.fix_safety if rule.fix_safety in (SAFE, UNSAFE) else UNSAFE
        out.append(_Found(f.code, line, pos.end.line, f.fix, safety, (f.code, source_line.strip())))
    return out


def _edit_nodes(fix) -> List[cst.CSTNode]:
    return [old for old, _ in fix.edits]


def _choose(module: cst.Module, candidates: List[_Found]) -> List[_Found]:
    """Fixes whose edited nodes neither contain nor lie inside another chosen fix's nodes."""
    if len(candidates) < 2:
        return candidates
    parents = _parents(module)

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
    for found in candidates:
        nodes = _edit_nodes(found.fix)
        signature = tuple(id(n) for n in nodes)
        if signature in seen:
            continue  # two findings, one repair
        chains = [chain(n) for n in nodes]
        if any(c[0] in covered or any(i in taken for i in c) for c in chains):
            continue
        seen.add(signature)
        chosen.append(found)
        for c in chains:
            taken.add(c[0])
            covered.update(c)
    return chosen


def apply_edits(module: cst.Module, edits: Dict[int, object], parents: Optional[dict] = None) -> cst.Module:
    """Replace nodes by identity, rebuilding only their ancestors; the rest is shared untouched."""
    if not edits:
        return module
    parents = parents if parents is not None else _parents(module)
    on_path: set = set()
    for key in edits:
        parent = parents.get(key)
        while parent is not None and id(parent) not in on_path:
            on_path.add(id(parent))
            parent = parents.get(id(parent))

    def rebuild(node):
        key = id(node)
        if key in edits:
            return edits[key]
        if key not in on_path:
            return node
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, cst.CSTNode):
                new = rebuild(value)
                if new is not value:
                    if isinstance(new, (cst.RemovalSentinel, cst.FlattenSentinel)):
                        raise FixError(f"cannot remove or expand the {f.name} of {type(node).__name__}")
                    changes[f.name] = new
            elif type(value) in (tuple, list):
                items, changed, dropped_last = [], False, None
                for index, item in enumerate(value):
                    new = rebuild(item) if isinstance(item, cst.CSTNode) else item
                    if new is not item:
                        changed = True
                    if new is cst.RemovalSentinel.REMOVE:
                        if index == len(value) - 1:
                            dropped_last = item
                        continue
                    if isinstance(new, cst.FlattenSentinel):
                        items.extend(new.nodes)
                    else:
                        items.append(new)
                if changed:
                    # The new last element takes the removed last one's trailing comma.
                    if dropped_last is not None and items and hasattr(items[-1], "comma") \
                            and hasattr(dropped_last, "comma"):
                        items[-1] = items[-1].with_changes(comma=dropped_last.comma)
                    changes[f.name] = tuple(items)
        return node.with_changes(**changes) if changes else node

    try:
        new = rebuild(module)
    except (cst.CSTValidationError, TypeError, ValueError) as exc:
        raise FixError(str(exc)) from exc
    if not isinstance(new, cst.Module):
        raise FixError("the module itself cannot be replaced")
    return new


def _imported(module: cst.Module, name: str) -> bool:
    """Is module ``name`` reachable by its own name (``import torch``, ``import torch.nn``)?"""
    for stmt in top_level_imports(module):
        if isinstance(stmt, cst.Import):
            for alias in stmt.names:
                path = dotted(alias.name)
                if alias.asname is None and path is not None and (path == name or path.startswith(name + ".")):
                    return True
    return False


def add_imports(module: cst.Module, names: Iterable[str]) -> cst.Module:
    """``import <name>`` for each name the file does not import, placed with the other imports.

    After the docstring and ``from __future__`` imports, before the first
    other top-level import (which hands it its leading comments).
    """
    missing = [n for n in dict.fromkeys(names) if not _imported(module, n)]
    if not missing:
        return module
    body = list(module.body)
    index = 0
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            break
        small = stmt.body[0]
        docstring = isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
        if i == 0 and docstring:
            index = 1
            continue
        if isinstance(small, cst.ImportFrom) and dotted(small.module) == "__future__":
            index = i + 1
            continue
        break
    first_import = None
    for i in range(index, len(body)):
        stmt = body[i]
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom)):
            first_import = i
            break
        if not isinstance(stmt, cst.SimpleStatementLine):
            break
    new = [cst.parse_statement(f"import {name}") for name in missing]
    if first_import is not None:
        anchor = body[first_import]
        new[0] = new[0].with_changes(leading_lines=anchor.leading_lines)
        body[first_import] = anchor.with_changes(leading_lines=())
        body[first_import:first_import] = new
    else:
        body[index:index] = new
    return module.with_changes(body=body)


def _apply(module: cst.Module, batch: List[_Found]) -> Tuple[cst.Module, List[List[cst.CSTNode]]]:
    edits: Dict[int, object] = {}
    inserted = []
    imports = []
    for found in batch:
        mine = []
        for old, new in found.fix.edits:
            if id(old) in edits:
                raise FixError("two edits of one node")
            edits[id(old)] = new
            if isinstance(new, cst.FlattenSentinel):
                mine.extend(new.nodes)
            elif isinstance(new, cst.CSTNode):
                mine.append(new)
        inserted.append(mine)
        imports.extend(found.fix.imports)
    new_module = apply_edits(module, edits)
    new_module = add_imports(new_module, imports)
    return new_module, inserted


def _verify(module, before, batch, path, rules):
    """Apply ``batch``; return (new module, new text, findings) or raise FixError saying why not."""
    from torchlint.positions import node_positions

    new_module, inserted = _apply(module, batch)
    text = new_module.code
    try:
        parsed = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise FixError(f"the fixed code does not parse ({exc.message})") from exc
    after = _lint(parsed, text, path, rules)
    old_counts = Counter(f.code for f in before)
    new_counts = Counter(f.code for f in after)
    fixed = Counter(f.code for f in batch)
    for code, count in new_counts.items():
        if count > old_counts[code] - fixed[code]:
            if code in fixed and count >= old_counts[code]:
                raise FixError(f"{code} is still reported after the fix")
            raise FixError(f"the fix would add a {code} finding")
    if any(nodes for nodes in inserted):
        try:
            positions = node_positions(new_module, [n for nodes in inserted for n in nodes])
        except Exception:  # a node shared twice: positions are only a check, counts still hold
            positions = {}
        for found, nodes in zip(batch, inserted):
            spans = [positions[id(n)] for n in nodes if id(n) in positions]
            for f in after:
                if f.code == found.code and any(s.start.line <= f.line <= s.end.line for s in spans):
                    raise FixError(f"{found.code} is still reported where the fix changed the code")
    return parsed, text, after


def fix_text(text: str, path: str, rules: Sequence[type], allowed: Iterable[str] = (SAFE,),
             only: Optional[Iterable[str]] = None) -> FixOutcome:
    """Apply every allowed fix the rules offer for ``text``; ``outcome.text`` is None when nothing changed.

    Every rule in ``rules`` checks the result; ``only`` (codes) limits which rules' fixes apply.
    """
    allowed = frozenset(allowed)
    only = frozenset(only) if only is not None else None
    outcome = FixOutcome()
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return outcome
    current = text
    refused: set = set()
    found = _lint(module, current, path, rules)
    for _ in range(MAX_PASSES):
        candidates = [f for f in found if f.fix is not None and f.safety in allowed and f.key not in refused
                      and (only is None or f.code in only)]
        if not candidates:
            break
        batch = _choose(module, candidates)
        try:
            module, current, found = (*_verify(module, found, batch, path, rules),)
            outcome.applied.extend((f.code, f.fix.description) for f in batch)
            continue
        except (FixError, RecursionError):
            pass
        # Something in the batch is wrong: try its fixes one at a time; refuse the
        # ones that fail alone, apply the first good one, and look again.
        for f in batch:
            try:
                module, current, found_now = _verify(module, found, [f], path, rules)
            except (FixError, RecursionError) as exc:
                refused.add(f.key)
                outcome.rejected.append((f.code, f.line, str(exc)))
                continue
            found = found_now
            outcome.applied.append((f.code, f.fix.description))
            break  # the remaining fixes point into the old tree; the next pass rebuilds them
    if current != text:
        outcome.text = current
    return outcome


# ---------------------------------------------------------------------------
# Files: encoding, atomic writes, diffs
# ---------------------------------------------------------------------------

def decode_file(data: bytes) -> Tuple[str, str]:
    """(text, encoding) the way Python reads a source file; the encoding re-creates a BOM."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):  # a BOM the codec kept (utf-8 with a BOM is utf-8-sig)
        text = text[1:]
        encoding = "utf-8-sig"
    return text, encoding


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step, keeping the file's permission bits.

    A read-only file is refused (``PermissionError``), as an editor would.
    """
    import tempfile

    st = os.stat(path)
    if not os.access(path, os.W_OK) or not st.st_mode & 0o222:  # read-only, even for root
        raise PermissionError(13, "Permission denied (the file is read-only)", path)
    target = os.path.realpath(path)  # write through a symlink, never over it
    folder = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".torchlint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unified_diff(path: str, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile=f"a/{path}", tofile=f"b/{path}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


@dataclass
class FileFix:
    path: str
    old: Optional[bytes] = None
    new: Optional[bytes] = None  # None: nothing to change
    outcome: FixOutcome = field(default_factory=FixOutcome)
    error: Optional[str] = None


def fix_data(path: str, data: bytes, rules: Sequence[type], allowed: Iterable[str]) -> FileFix:
    """Fix one file's bytes; the result keeps the file's encoding, BOM and line endings."""
    from torchlint.engine import with_room

    result = FileFix(path, old=data)
    try:
        text, encoding = decode_file(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        result.error = f"cannot decode file: {exc}"
        return result
    try:  # with_room: a big file is fixed on a thread with a large stack (libcst recurses in C)
        outcome = with_room(len(text), fix_text, text, path, rules, allowed)
    except Exception as exc:  # a bug of ours: the file stays as it was
        result.error = f"internal error while fixing: {type(exc).__name__}: {exc}"
        return result
    result.outcome = outcome
    if outcome.text is not None:
        try:
            result.new = outcome.text.encode(encoding)
        except UnicodeEncodeError as exc:
            result.error = f"fixed text cannot be encoded as {encoding}: {exc}"
    return result


def fix_notebook(path: str, data: bytes, rules: Sequence[type], allowed: Iterable[str]) -> FileFix:
    """Fix a notebook's code cells as one program; only the cells that change are rewritten."""
    from torchlint import notebook
    from torchlint.engine import _deep_recursion

    result = FileFix(path, old=data)

    def transform(text: str) -> Optional[str]:
        result.outcome = fix_text(text, path, rules, allowed)
        return result.outcome.text

    with _deep_recursion():
        try:
            result.new = notebook.rewrite(data, transform)
        except notebook.NotebookError as exc:
            result.error = f"notebook not fixed: {exc}"
        except Exception as exc:  # a bug of ours: the file stays as it was
            result.error = f"internal error while fixing: {type(exc).__name__}: {exc}"
    return result


def fix_source(source: str, path: str, codes: Iterable[str], unsafe: bool = False) -> str:
    """The language server's quick fix: ``source`` with the fixes of ``codes`` applied.

    The default rules (and ``codes``) check the result, as ``--fix`` does; the
    text comes back unchanged when nothing applies.
    """
    from torchlint.engine import _deep_recursion
    from torchlint.rules import ALL_RULES, DEFAULT_CODES

    codes = frozenset(codes)
    rules = [rule for rule in ALL_RULES if rule.code in DEFAULT_CODES or rule.code in codes]
    with _deep_recursion():
        outcome = fix_text(source, path, rules, {SAFE, UNSAFE} if unsafe else {SAFE}, only=codes)
    return outcome.text if outcome.text is not None else source


# ---------------------------------------------------------------------------
# The CLI's side: which files to fix, what to tell the user
# ---------------------------------------------------------------------------

@dataclass
class FixRun:
    fixes: List[FileFix] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)  # for stderr, one line each
    results: list = field(default_factory=list)  # the check results, re-linted where written

    @property
    def changed(self) -> List[FileFix]:
        return [f for f in self.fixes if f.new is not None and f.error is None]


def _codes_for(path, settings) -> frozenset:
    """The codes ``path`` is checked for: the same resolver as ``check`` (config.Settings)."""
    return settings.codes_for(path)


def fix_files(files: Sequence[str], results: Sequence, settings, *, unsafe: bool, write: bool) -> FixRun:
    """Fix the files whose check results hold an allowed fix; write them unless ``write`` is False.

    A notebook gets only its changed cells rewritten. A file that cannot be
    read, fixed or written is reported in ``errors``; the others go on.
    """
    from torchlint.rules import ALL_RULES
    from torchlint.runner import lint_data

    allowed = {SAFE, UNSAFE} if unsafe else {SAFE}
    run = FixRun(results=list(results))
    for index, (path, result) in enumerate(zip(files, results)):
        codes = _codes_for(path, settings)
        wanted = [d for d in result.diagnostics if d.code in codes and getattr(d, "fix", None) in allowed]
        if not wanted:
            continue
        # Every enabled rule runs: a fix must not bring in a finding of another rule.
        rules = [rule for rule in ALL_RULES if rule.code in codes]
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            run.errors.append(f"{path}: cannot read file: {exc.strerror or exc}")
            continue
        fix = fix_notebook if path.endswith(".ipynb") else fix_data
        fixed = fix(path, data, rules, allowed)
        for code, line, reason in fixed.outcome.rejected:
            run.errors.append(f"{path}:{line}: {code} fix not applied: {reason}")
        if fixed.error is not None:
            run.errors.append(f"{path}: {fixed.error}")
        elif fixed.new is not None and write:
            try:
                write_atomic(path, fixed.new)
            except OSError as exc:
                fixed.error = f"cannot write fixed file: {exc.strerror or exc}"
                run.errors.append(f"{path}: {fixed.error}")
            else:  # what remains is what the file now holds, checked the way `check` does
                run.results[index] = lint_data(path, fixed.new, codes)
        run.fixes.append(fixed)
    return run
