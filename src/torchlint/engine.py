"""The pipeline for one file: decode, gate, parse once, build the model, run rules."""
from __future__ import annotations

import ast
import contextlib
import gc
import os
import queue
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Collection, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Type, Union

import libcst as cst

from torchlint.cst_parse import PieceCache, cut_lines, parse_module
from torchlint.diagnostic import Applicability, Diagnostic, FileError, FileResult, error_summary
from torchlint.model import FileModel
from torchlint.model.project import ProjectLookup
from torchlint.noqa import answered_codes, comment_texts, file_exemption, suppressed, unused_codes
from torchlint.noqa import with_codes_replaced, without_codes
from torchlint.positions import RangeMemo, StatementStarts, node_positions, statement_starts
from torchlint.rule import Finding, Fix, Rule
from torchlint.safe_io import raise_hidden_interrupt
from torchlint.source import byte_position, decode, python_parse
from torchlint.torch_version import TorchVersion
from torchlint.tree_gate import TreeIndex

# The codes that are not rules live in a light module (config and a cached run read them
# without importing libcst); re-exported here for the engine's callers.
from torchlint.codes import INTERNAL_ERROR, PARSE_ERROR, STATUS_CODES, TORCHFIX_NOQA, UNUSED_NOQA  # noqa: F401

# Guards against pathological input (see docs/robustness.md). libcst's native
# parser recurses once per nesting level on the C stack: on the 8 MB main-thread
# stack, ~10,000 chained ``and``s or ``not``s crash the process (SIGSEGV) instead
# of raising. Sources longer than _BIG_SOURCE (the only ones that can nest that
# deep: every level takes at least one character) are analysed on a thread
# with a large stack, and are first offered to Python's own parser at Python's
# default recursion limit: what ``python file.py`` cannot compile for being too
# deep is reported as TL001 instead of taking libcst minutes (its time grows
# faster than the square of the depth of ``a + a + ...`` chains).
_BIG_SOURCE = 8192
_BIG_STACK = 512 << 20  # address space only: pages are touched by deep recursion alone
# libcst's codegen (positions) takes three Python frames per nesting level,
# some through C (context managers): room for ~30,000 levels on _BIG_STACK.
_BIG_RECURSION_LIMIT = 100_000


@dataclass
class LintMemory:
    """What a long-running caller (the language server) keeps from one lint to the next
    of texts that change a little at a time: parsed pieces (``cst_parse.PieceCache``)
    and statement ranges (``positions.RangeMemo``), reused where the text is unchanged.
    One lint at a time may use it."""

    pieces: PieceCache = field(default_factory=PieceCache)
    ranges: RangeMemo = field(default_factory=RangeMemo)


class LintCancelled(Exception):
    """Raised by a lint whose ``cancelled()`` said yes at one of its checkpoints
    (between parsing, the model and each rule): its result would be thrown away."""


def _stop_if(cancelled: Optional[Callable[[], bool]]) -> None:
    if cancelled is not None and cancelled():
        raise LintCancelled()


def lint_source(source: Union[str, bytes], path: str, rules: Sequence[Type[Rule]], **options) -> FileResult:
    big = len(source) > _BIG_SOURCE
    with _deep_recursion(_BIG_RECURSION_LIMIT if big else 12000), _no_cyclic_gc():
        if big and not _THREAD.has_big_stack:
            return _on_big_stack(_lint, source, path, rules, **options)
        return _lint(source, path, rules, **options)


class _ThreadState(threading.local):
    has_big_stack = False


_THREAD = _ThreadState()


def start_big_stack_thread(target: Callable[[], None], name: str, fallback: bool = True) -> threading.Thread:
    """Start ``target`` on a daemon thread with the stack deep sources need: a caller that
    lints on one thread for a long time (the language server) lints there in place,
    without handing each big file to another thread. On a platform that cannot set a
    thread's stack size, an ordinary thread (``fallback``) or ValueError/RuntimeError."""
    def on_big_stack() -> None:
        _THREAD.has_big_stack = True
        target()

    try:
        old = threading.stack_size(_BIG_STACK)
    except (ValueError, RuntimeError):  # a platform that cannot: big files get their own thread
        if not fallback:
            raise
        old = None
    try:
        thread = threading.Thread(target=on_big_stack if old is not None else target, name=name, daemon=True)
        thread.start()
    finally:
        if old is not None:
            threading.stack_size(old)
    return thread


def with_room(size: int, fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with the recursion room libcst needs for a source of ``size``
    characters: a raised recursion limit and, for big sources, a thread with a large stack.
    For callers that parse or print with libcst outside ``lint_source`` (the fixer)."""
    big = size > _BIG_SOURCE and not _THREAD.has_big_stack
    with _deep_recursion(_BIG_RECURSION_LIMIT if size > _BIG_SOURCE else 12000):
        return _on_big_stack(fn, *args, **kwargs) if big else fn(*args, **kwargs)


def _on_big_stack(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` on this process's thread with a large C stack; its exception
    is re-raised here. One thread serves every call: a thread started per big file cost
    ~4 ms each (its fresh 512 MB stack mapped and unmapped), a tenth of a file's lint."""
    worker = _BigStackWorker.of_this_process()
    if worker is None:  # a platform that cannot: run in place
        return fn(*args, **kwargs)
    return worker.call(fn, args, kwargs)


class _BigStackWorker:
    """A daemon thread with a big stack that runs the calls handed to it, one at a time."""

    _current: Optional["_BigStackWorker"] = None
    _starting = threading.Lock()

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        self.thread = start_big_stack_thread(self._serve, "torchlint-deep", fallback=False)

    @classmethod
    def of_this_process(cls) -> Optional["_BigStackWorker"]:
        """The worker, started on first use; anew in a forked child (threads do not survive a fork)."""
        with cls._starting:
            current = cls._current
            if current is None or current.pid != os.getpid():
                try:
                    current = cls._current = cls()
                except (ValueError, RuntimeError):  # no settable stack size here
                    return None
            return current

    def call(self, fn, args, kwargs):
        done = threading.Event()
        box: Dict[str, Any] = {}
        self.jobs.put((fn, args, kwargs, box, done))
        try:
            done.wait()
        except KeyboardInterrupt:
            # Let the file in hand finish: Python aborts (SIGABRT) when it exits
            # while a daemon thread is still inside libcst's native code.
            done.wait()
            raise
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _serve(self) -> None:
        while True:
            fn, args, kwargs, box, done = self.jobs.get()
            try:
                box["value"] = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc
            finally:
                del fn, args, kwargs  # the file's text and trees go now, not at the next call
                done.set()


def _lint(
    source: Union[str, bytes],
    path: str,
    rules: Sequence[Type[Rule]],
    *,
    apply_noqa: bool = True,
    report_syntax_errors: bool = True,
    tree: Optional[ast.Module] = None,
    noqa_checks: frozenset = frozenset(),
    target_torch: Optional[TorchVersion] = None,
    memory: Optional[LintMemory] = None,
    cancelled: Optional[Callable[[], bool]] = None,
) -> FileResult:
    result = FileResult(path)
    if isinstance(source, bytes):
        raw = source
        try:
            source = decode(raw)
        except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
            line, col = byte_position(raw, exc.start) if isinstance(exc, UnicodeDecodeError) else (1, 1)
            result.diagnostics.append(Diagnostic(path, line, col, PARSE_ERROR, f"cannot decode file: {exc}"))
            return result
    # A file parsed whatever the gates say meets them once, in ``_tree_gated``, on its
    # text without docstrings: asking them of the whole text first only repeats the scan.
    parsed_anyway = report_syntax_errors or bool(noqa_checks)
    applicable = list(rules) if parsed_anyway else [rule for rule in rules if rule.may_apply(source)]
    if not applicable and not parsed_anyway:
        return result
    # Python's own parser decides what is a syntax error, and where (TL001 at
    # compile()'s line and column, with its message). Its tree (an eighth of
    # libcst's cost; free under flake8) then may spare the libcst parse: see
    # tree_gate.py. Files no rule needs stop here.
    if tree is None:
        tree, problem = python_parse(source)
        if problem is not None:
            if report_syntax_errors:
                result.diagnostics.append(problem.diagnostic(path))
            return result
    assert tree is not None  # python_parse gives a tree or a problem
    _stop_if(cancelled)
    project = ProjectLookup(path)  # the gate's questions and the model share it
    if applicable:
        applicable = _tree_gated(applicable, tree, source, path, target_torch, result.dependencies, project=project)
    if not applicable:
        # No rule can find anything: every TL code in a noqa comment went unused.
        if noqa_checks:
            result.diagnostics.extend(_noqa_checked([], source, path, apply_noqa, noqa_checks))
        return result
    pieces = memory.pieces if memory is not None else None
    cuts = cut_lines(tree, source, pieces.piece_lines if pieces is not None else None)
    starts = statement_starts(tree, source)
    # The stdlib tree is done with: freed before libcst builds its own, so the
    # two never take memory at once (a worker's peak is its biggest file's).
    tree = None
    try:
        module = parse_module(source, cuts, pieces)
    except cst.ParserSyntaxError as exc:
        # Python accepts what libcst refused (its own limits, e.g. 10,000
        # adjacent string literals): not the user's syntax error.
        message = f"libcst cannot parse this file, though Python can ({exc.message}); not analysed"
        result.errors.append(FileError(path, message))
        return result
    except (RecursionError, MemoryError, ValueError) as exc:
        result.errors.append(FileError(path, f"cannot parse: {type(exc).__name__}: {exc}"))
        return result
    _stop_if(cancelled)
    diagnostics, errors = lint_module(module, source, path, applicable, apply_noqa=apply_noqa,
                                      noqa_checks=noqa_checks, target_torch=target_torch,
                                      dependencies=result.dependencies, statement_starts=starts,
                                      ranges=memory.ranges if memory is not None else None,
                                      cancelled=cancelled, project=project)
    result.diagnostics.extend(diagnostics)
    result.errors.extend(errors)
    return result


def lint_module(module: cst.Module, source: str, path: str, rules: Sequence[Type[Rule]], *,
                apply_noqa: bool = True, keep_edits: bool = False, noqa_checks: frozenset = frozenset(),
                target_torch: Optional[TorchVersion] = None,
                dependencies: Optional[dict] = None,
                statement_starts: Optional[StatementStarts] = None, ranges: Optional[RangeMemo] = None,
                cancelled: Optional[Callable[[], bool]] = None,
                project: Optional[ProjectLookup] = None) -> Tuple[List[Diagnostic], List[FileError]]:
    """The rules' sorted findings on a parsed module, and the errors met on the way.

    A file's ``# torchlint: noqa`` exemption applies always (flake8 does not know
    it); line ``# noqa`` only with ``apply_noqa`` (flake8 applies its own).
    ``noqa_checks``: the engine's checks of noqa comments to make (TL010, unused codes; TL011,
    TorchFix codes a torchlint code answers).
    ``target_torch``: the oldest torch the file's project supports (None: the newest known).
    ``dependencies`` receives the project files the analysis read (``model/project.py``).
    ``statement_starts``: ``positions.statement_starts`` of Python's tree of ``source``, when
    the caller had one (it spares a codegen of the module to place findings); ``ranges``:
    statement ranges kept from earlier lints (``LintMemory``). ``cancelled`` is asked
    between rules: ``LintCancelled`` when it says yes. ``project``: the file's project
    lookup, when the caller's tree gate has one (the folders above the file are looked in once).

    The one lint path after parsing, for checking and for the fix loop (which
    passes ``keep_edits`` to get each fix's tree edits on its diagnostic). The
    caller provides the recursion room (``lint_source``, ``with_room``).
    """
    errors: List[FileError] = []
    try:
        file_model = FileModel(module, path, target_torch=target_torch, project=project)
    except RecursionError:
        return [], [FileError(path, "nesting too deep to analyse; file skipped")]
    except Exception as exc:  # a bug of ours: say so, keep the run going
        raise_hidden_interrupt(exc)
        return [], [FileError(path, f"internal error building the model: {error_summary(exc)}", internal=True)]
    if any(rule.torch_programs_only for rule in rules) and (not file_model.is_torch_code or file_model.is_test_file):
        rules = [rule for rule in rules if not rule.torch_programs_only]
    findings: List[Finding] = []
    for rule in rules:
        _stop_if(cancelled)
        try:
            findings.extend(rule().check(file_model))
        except Exception as exc:
            raise_hidden_interrupt(exc)
            message = f"internal error in {rule.code} ({rule.name}): {error_summary(exc)}"
            errors.append(FileError(path, message, internal=True))
    if file_model.dead_suites:
        findings = _live(findings, file_model)
    if dependencies is not None:
        dependencies.update(file_model.consulted_files())
    diagnostics: List[Diagnostic] = []
    if findings:
        try:
            diagnostics = list(_positioned(module, path, findings, keep_edits, statement_starts, ranges,
                                           file_model.parents))
        except RecursionError:
            errors.append(FileError(path, "nesting too deep to locate its findings; file skipped"))
    if diagnostics or noqa_checks:
        diagnostics = _noqa_checked(diagnostics, source, path, apply_noqa, noqa_checks,
                                    module if keep_edits else None)
    diagnostics.sort()
    file_model.release()  # its tree goes now, not when the cyclic collector next runs
    return diagnostics, errors


def _live(findings: List[Finding], file_model: FileModel) -> List[Finding]:
    """``findings`` less those in code that never runs, and less any fix that would edit
    such code (the finding stays, unfixed): the model records nothing from there, but a
    rule that walks a statement itself may still meet it."""
    live = []
    for f in findings:
        if file_model.is_dead(f.node):
            continue
        if f.fix is not None and any(file_model.is_dead(node) for node, _ in f.fix.edits):
            f = replace(f, fix=None)
        live.append(f)
    return live


def _noqa_checked(diagnostics: List[Diagnostic], source: str, path: str, apply_noqa: bool,
                  noqa_checks: frozenset, module: Optional[cst.Module] = None) -> List[Diagnostic]:
    """Findings after the file exemption, the checks of noqa comments (when asked: TL010,
    TL011) and line noqa, in that order: TL010 judges line noqa on what the file exemption
    left, and the checks' findings can themselves be silenced."""
    exempt = file_exemption(source) or ("-",)
    if exempt != ("-",):
        diagnostics = [d for d in diagnostics if not d.code.startswith(exempt)]
    if UNUSED_NOQA in noqa_checks and not UNUSED_NOQA.startswith(exempt):
        diagnostics = diagnostics + _unused_noqa_findings(diagnostics, source, path, module)
    if TORCHFIX_NOQA in noqa_checks and not TORCHFIX_NOQA.startswith(exempt):
        diagnostics = diagnostics + _torchfix_noqa_findings(source, path, module)
    if apply_noqa and diagnostics:
        lines = source.splitlines()
        diagnostics = [
            d for d in diagnostics
            if not (d.line <= len(lines) and suppressed(lines[d.line - 1], d.code))
        ]
    return diagnostics


def _unused_noqa_findings(diagnostics: List[Diagnostic], source: str, path: str,
                          module: Optional[cst.Module]) -> List[Diagnostic]:
    """TL010's findings, marked safely fixable where the comment can be rewritten; with
    ``module`` (the fix loop) they carry the edit, one rewrite of the file's comments."""
    from torchlint.rules import RULES_BY_CODE

    known = {*RULES_BY_CODE, *STATUS_CODES}
    found = [(d.line, d.code) for d in diagnostics]
    unused = unused_codes(source, found, known, UNUSED_NOQA)
    by_line: dict = {}
    for item in unused:
        by_line.setdefault(item.line, set()).add(item.code)
    rewrite = _CommentRewrite(source, module, lambda text, line: without_codes(text, by_line[line]), by_line)
    out = []
    for item in unused:
        why = "unknown code" if item.unknown else "suppressed nothing on this line"
        codes = sorted(by_line[item.line])
        description = f"remove unused noqa code{'s' if len(codes) > 1 else ''} {', '.join(codes)}"
        out.append(rewrite.diagnostic(path, item.line, item.col, UNUSED_NOQA,
                                      f"unused noqa code {item.code}: {why}", description))
    return out


def _torchfix_noqa_findings(source: str, path: str, module: Optional[cst.Module]) -> List[Diagnostic]:
    """TL011's findings: TorchFix codes in noqa lists that torchlint codes answer, each with the safe
    fix that writes them in its place (one rewrite of the file's comments, as TL010's)."""
    from torchlint.torchfix_codes import ANSWERS

    foreign = answered_codes(source, ANSWERS)
    replacements: dict = {}
    for item in foreign:
        replacements.setdefault(item.line, {})[item.code] = item.answers
    rewrite = _CommentRewrite(source, module, lambda text, line: with_codes_replaced(text, replacements[line]),
                              replacements)
    return [rewrite.diagnostic(path, item.line, item.col, TORCHFIX_NOQA,
                               f"TorchFix code {item.code} in noqa: torchlint's {', '.join(item.answers)} "
                               f"finds the same; write {', '.join(item.answers)} instead",
                               f"replace {item.code} with {', '.join(item.answers)}")
            for item in foreign]


class _CommentRewrite:
    """One rewrite of a file's comments, shared by every finding of a noqa check: comments are
    layout that the fixer's node edits cannot reach, so the module is rebuilt with them rewritten."""

    def __init__(self, source: str, module: Optional[cst.Module], rewritten: Callable[[str, int], Optional[str]],
                 lines: Collection[int]) -> None:
        comments = comment_texts(source) if lines else []
        self.new_texts = {line: rewritten(text, line) for line, text in comments if line in lines}
        self.module = module
        self.edited = _comments_rewritten(module, comments, self.new_texts) if module is not None and lines else None

    def diagnostic(self, path: str, line: int, col: int, code: str, message: str, description: str) -> Diagnostic:
        fixable = self.new_texts.get(line) is not None
        edit = None
        if fixable and self.module is not None and self.edited is not None:
            edit = Fix(description, ((self.module, self.edited),), applicability=Applicability.SAFE)
        return Diagnostic(path, line, col, code, message, fix=Applicability.SAFE if fixable else None,
                          fix_description=description if fixable else None, edit=edit)


class _CommentHolders(cst.CSTVisitor):
    """The nodes that own a comment, in source order: the fix edits the owner."""

    def __init__(self) -> None:
        self.found: list = []

    def visit_TrailingWhitespace(self, node: cst.TrailingWhitespace) -> None:
        if node.comment is not None:
            self.found.append(node)

    def visit_EmptyLine(self, node: cst.EmptyLine) -> None:
        if node.comment is not None:
            self.found.append(node)


def _comments_rewritten(module: cst.Module, comments: list, new_texts: dict) -> Optional[cst.Module]:
    """``module`` with each line's comment replaced by ``new_texts[line]`` (removed when "").
    libcst's comments are matched to the tokenizer's in order; on any mismatch, None."""
    holders = _CommentHolders()
    module.visit(holders)
    if len(comments) != len(holders.found) or any(
            holder.comment.value != text for holder, (_, text) in zip(holders.found, comments)):
        return None
    replacements = {}
    for holder, (line, _) in zip(holders.found, comments):
        new = new_texts.get(line)
        if new is None:
            continue
        if new:
            replacements[id(holder)] = holder.with_changes(comment=holder.comment.with_changes(value=new))
        elif isinstance(holder, cst.TrailingWhitespace):
            replacements[id(holder)] = holder.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
        else:  # a line that held only the comment goes with it
            replacements[id(holder)] = cst.RemoveFromParent()
    if not replacements:
        return None
    return module.visit(_Replacer(replacements))


class _Replacer(cst.CSTTransformer):
    def __init__(self, replacements: dict) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node, updated_node):
        return self.replacements.get(id(original_node), updated_node)


def _tree_gated(rules: list, tree: ast.Module, source: str, path: str,
                target_torch: Optional[TorchVersion] = None, dependencies: Optional[dict] = None,
                every_question: bool = False, project: Optional[ProjectLookup] = None) -> list:
    """The rules that still may find something, asked of the tree: whether the file is
    a torch program at all, their text gates on the code without its docstrings, then
    their own questions (``_admitted``; ``every_question``: each rule's, as
    ``bench/gates.py`` counts them). What a question read of other modules of the project
    goes to ``dependencies``, as the analysis's reads do: a cached answer depends on them too."""
    tree_index = TreeIndex(tree, source, target_torch, path, project)
    if any(rule.torch_programs_only for rule in rules) and tree_index.is_unit_test_or_other_framework(path):
        rules = [rule for rule in rules if not rule.torch_programs_only]
    code = tree_index.code_text()
    texted = [rule for rule in rules if rule.may_apply(code)]
    gated = [rule for rule in texted if rule.needs_tree(tree_index)] if every_question \
        else _admitted(texted, tree_index)
    if dependencies is not None:
        dependencies.update(tree_index.consulted_files())
    return gated


def _admitted(rules: list, tree_index: TreeIndex) -> list:
    """The rules (in their order) a file's tree questions leave to check. Asked cheapest
    first (``Rule.question_cost``) until one admits the file: it is parsed then, and the
    rest are let through unasked (their checks find nothing where their questions would
    have said no: the gates are sound), but those whose check costs more than their
    question (``Rule.asked_when_parsed``)."""
    admitted, parsed = set(), False
    for rule in sorted(rules, key=_question_cost):
        if (parsed and not rule.asked_when_parsed) or rule.needs_tree(tree_index):
            admitted.add(rule)
            parsed = True
    return [rule for rule in rules if rule in admitted]


def _question_cost(rule: Type[Rule]) -> int:
    return rule.question_cost


@contextlib.contextmanager
def _deep_recursion(limit: int = 12000):
    """libcst visits recursively: long ``a + b + ...`` chains need more than 1000 frames."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


@contextlib.contextmanager
def _no_cyclic_gc():
    """A big file's tree is hundreds of thousands of live objects, and the cyclic
    collector rescans them all every few thousand allocations: time per line grew
    with file size. Trees hold no cycles (reference counting frees them), so the
    collector waits until the file is done."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _positioned(module: cst.Module, path: str, findings: Iterable, keep_edits: bool = False,
                starts: Optional[StatementStarts] = None, ranges: Optional[RangeMemo] = None,
                parents: Optional[dict] = None) -> Iterator[Diagnostic]:
    """Diagnostics for ``findings``, in the order given, duplicates dropped."""
    findings = list(findings)
    positions = node_positions(module, [f.node for f in findings], starts, ranges, parents)
    seen = set()
    for f in findings:
        pos = positions[id(f.node)]
        fix = f.fix
        d = Diagnostic(path, pos.start.line, pos.start.column + 1, f.code, f.message,
                       pos.end.line, pos.end.column + 1,
                       fix=fix.applicability if fix is not None else None,
                       fix_description=fix.description if fix is not None else None,
                       edit=fix if keep_edits else None)
        if (d.line, d.col, d.code) not in seen:
            seen.add((d.line, d.col, d.code))
            yield d
