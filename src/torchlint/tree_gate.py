"""The second gate: a look at the stdlib ``ast`` tree before paying for libcst.

The text gate (``Rule.gate``) lets through every file that merely mentions a
rule's markers: ``+=`` and ``loader`` are in most training files. libcst costs
about eight times what ``ast.parse`` does, so a rule whose findings need a
particular shape (a loop that stores values, code that calls ``backward``) can
look for that shape first (``Rule.needs_tree``). A gate answers "could this
rule find anything here?"; it may say yes too often, never no too often: tests
run every fixture and corpus file with and without it.

Walking a whole ast in Python costs more than parsing it in C, so the facts
are gathered from statements only, and expressions are read just where they
matter: inside loops, in loop headers and in code that runs at import time.
What the text can answer (is ``backward`` called at all?) is answered there.
flake8 hands its plugins the ast tree it already built, so there it is free.

A rule declares what its findings need (``needs/``: calls, definitions, loops,
markers, questions of values), and its text gate and its question of this tree are
both computed from the declaration; the shapes read the indexes and node readers
here, which serve any shape.
"""
from __future__ import annotations

import ast
import bisect
import functools
import re
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple, Type, Union, cast

from torchlint.model.ast_reading import assignment_targets, ast_dotted, flat_targets, grad_off_item, imported_definition
from torchlint.model.roles import _MOVES  # what hands back the module it is called on
from torchlint.model.vocab import FORWARD_METHODS, called_module, is_eval_function_name, is_eval_loader_name, is_model_name
from torchlint.model.vocab import last_name
from torchlint.model.vocab import LIBRARIES_AROUND_TORCH, NON_TORCH_LIBRARIES, OTHER_FRAMEWORKS, TEST_FRAMEWORKS, is_pytest_conftest
from torchlint.model.vocab import ACTIVATION_FUNCTIONS, ACTIVATION_LAYERS, ACTIVATION_METHODS, LAYOUT_METHODS, PAIRED_LOSSES
from torchlint.torch_version import NEWEST_KNOWN, TorchVersion

if TYPE_CHECKING:
    from torchlint.model.project import ProjectLookup, ProjectView

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


class TreeIndex:
    """What the rules' tree gates read, from one statement-level pass over an ast tree:
    indexes (loops, bodies, import-time code, docstring-blanked text) and the
    questions more than one rule asks."""

    def __init__(self, tree: ast.Module, source: str, target_torch: Optional[TorchVersion] = None,
                 path: str = "", project: Optional["ProjectLookup"] = None) -> None:
        self.source = source
        self.path = path  # the file's, for its project (``project``)
        self._project = project  # made when a question first asks (its module imports libcst)
        self.target_torch: TorchVersion = target_torch or NEWEST_KNOWN  # what version-dependent rules read
        self.loops: List[Tuple[str, Union[ast.For, ast.AsyncFor, ast.While]]] = []  # (enclosing function name, loop)
        # The loops of ``loops`` no other loop of their scope holds: walking their nodes
        # (``loop_nodes``) meets every node of every loop's body once, where a walk of each
        # loop meets a nested loop's nodes again inside every loop around it.
        self.outermost_loops: List[ast.AST] = []
        self.import_time: List[ast.AST] = []  # statements that run when the module is imported
        self.function_names: set = set()
        self.definitions: dict = {}  # name -> the functions and classes of that name, at any depth
        self.assignments: List[ast.Assign] = []  # every ``a = b`` statement, at any depth
        self.bodies: List[list] = [tree.body]  # the module's and every function's statements
        self.body_owners: List[str] = [""]  # the function each of ``bodies`` belongs to ("": the module)
        self.string_statements: List[Tuple[int, int]] = []  # (first, last line) of docstrings
        self.imports: List[Union[ast.Import, ast.ImportFrom]] = []  # every import statement, at any depth
        self._scan(tree.body, owner="", import_time=True)
        self._code_text: Optional[str] = None
        self._constructed: Optional[frozenset] = None
        self._import_time_nodes: Optional[List[ast.AST]] = None
        self._module_nodes: Optional[List[ast.AST]] = None
        self._project_imports: Optional[frozenset] = None
        self._repeatable: Optional[frozenset] = None
        self._method_ids: Optional[frozenset] = None
        self._body_nodes: dict = dict.fromkeys(map(id, self.bodies))  # id of a body -> its own nodes, once walked
        self._derived: dict = {}

    def derived(self, fact: Callable[["TreeIndex"], Any]) -> Any:
        """``fact(self)``, computed once per tree: what several gates (or one gate's several
        questions) read, such as the paths of tensors made to require grad."""
        if fact not in self._derived:
            self._derived[fact] = fact(self)
        return self._derived[fact]

    def code_text(self) -> str:
        """The source with the inner lines of docstrings (any bare string statement)
        blanked: ``>>> loss.backward()`` in a docstring is no call. Rules' text gates
        run on it again here. Only the lines strictly between a string statement's
        first and last are blanked, so no code that shares a line with one is; a
        source with ``\r`` line ends is left whole (its line numbers would need
        Python's own splitting)."""
        if self._code_text is None:
            self._code_text = self.source
            if self.string_statements and "\r" not in self.source:
                lines = self.source.split("\n")
                for first, last in self.string_statements:
                    lines[first:last - 1] = [""] * (last - 1 - first)  # 1-based, both kept
                self._code_text = "\n".join(lines)
        return self._code_text

    def _scan(self, body, owner: str, import_time: bool) -> None:
        # A stack, not recursion: one call per statement was most of the index's cost.
        # Statements are visited in the order the recursive walk took (indexes keep it).
        todo = [(stmt, owner, import_time, False) for stmt in reversed(body)]
        pop, push = todo.pop, todo.append
        while todo:
            stmt, owner, import_time, in_loop = pop()
            if isinstance(stmt, _DEFINITIONS):
                self.definitions.setdefault(stmt.name, []).append(stmt)
            elif isinstance(stmt, ast.Assign):
                self.assignments.append(stmt)
            elif isinstance(stmt, _IMPORTS):
                self.imports.append(stmt)
            if isinstance(stmt, _FUNCTIONS):
                self.function_names.add(stmt.name)
                self.bodies.append(stmt.body)
                self.body_owners.append(stmt.name)
                for child in reversed(stmt.body):
                    push((child, stmt.name, False, False))
                continue
            if isinstance(stmt, LOOPS):
                self.loops.append((owner, stmt))
                if not in_loop:
                    self.outermost_loops.append(stmt)
            elif _is_long_string_statement(stmt):
                self.string_statements.append((stmt.lineno, stmt.end_lineno))
            if import_time and not isinstance(stmt, ast.ClassDef):
                self.import_time.append(stmt)
            children = _child_statements(stmt)
            if children:  # a class body runs at import time too
                in_loop = in_loop or isinstance(stmt, LOOPS)  # a class body's loops are the scope's too
                for child in reversed(children):
                    push((child, owner, import_time, in_loop))

    # -- indexes any rule's question may read --------------------------------
    def module_nodes(self) -> List[ast.AST]:
        """Every node of the module, functions and classes included (``all_nodes``), walked
        once for the rules whose questions need the whole file."""
        if self._module_nodes is None:
            self._module_nodes = all_nodes(ast.Module(body=self.bodies[0], type_ignores=[]))
        return self._module_nodes

    def nodes_of(self, body: list) -> List[ast.AST]:
        """``own_nodes(body)``, in its order; for one of ``bodies``, walked once for every
        question that reads it (several gates walk every body of a file)."""
        nodes = self._body_nodes.get(id(body))
        if nodes is None:
            nodes = list(own_nodes(body))
            if id(body) in self._body_nodes:
                self._body_nodes[id(body)] = nodes
        return nodes

    def method_ids(self) -> frozenset:
        """The ids of the functions defined directly in a class body."""
        if self._method_ids is None:
            self._method_ids = frozenset(id(stmt) for functions in self.definitions.values() for cls in functions
                                         if isinstance(cls, ast.ClassDef) for stmt in cls.body
                                         if isinstance(stmt, _FUNCTIONS))
        return self._method_ids

    def imported_roots(self) -> frozenset:
        """The top packages the file's absolute imports name, at any depth: ``torch`` of
        ``import torch.nn as nn``, ``pytest`` of ``from pytest import raises`` (what
        ``names.Names.imported_roots`` collects from libcst's tree)."""
        roots: Set[str] = set()
        for stmt in self.imports:
            if isinstance(stmt, ast.Import):
                roots.update(alias.name.split(".", 1)[0] for alias in stmt.names)
            elif not stmt.level and stmt.module:
                roots.add(stmt.module.split(".", 1)[0])
        return frozenset(roots)

    def is_unit_test_or_other_framework(self, path: str) -> bool:
        """Is the file surely one that ``Rule.torch_programs_only`` rules leave alone: a unit
        test by its imports or name (``unit_tests.is_unit_test_file``'s first tests) or code
        of another framework (``names.Names.foreign_framework``)? No only means unsure."""
        if is_pytest_conftest(path):
            return True
        roots = self.imported_roots()
        return bool(roots & TEST_FRAMEWORKS) or ("torch" not in roots and bool(roots & OTHER_FRAMEWORKS))

    def repeatable_functions(self) -> frozenset:
        """Names of the functions ``FileModel.repeats`` may find run more than once: called (by
        name, or as anything's method) where a call repeats (``repeated_calls``), or from such a
        function, at any remove."""
        if self._repeatable is None:
            called: Dict[Optional[str], Set[Optional[str]]] = {}  # function name -> the names its own code calls
            found: Set[Optional[str]] = set()
            for owner, body in zip(self.body_owners, self.bodies):
                nodes = self.nodes_of(body)
                repeated = repeated_calls(nodes)
                names = called.setdefault(owner, set())
                for node in nodes:
                    if isinstance(node, ast.Call):
                        name = called_name(node)
                        names.add(name)
                        if id(node) in repeated:
                            found.add(name)
            todo = list(found)
            while todo:
                for name in called.get(todo.pop(), ()):
                    if name not in found:
                        found.add(name)
                        todo.append(name)
            self._repeatable = frozenset(found)
        return self._repeatable

    def import_time_nodes(self) -> List[ast.AST]:
        """Every node of the code that runs when the module is imported (scripts, notebooks)."""
        if self._import_time_nodes is None:
            self._import_time_nodes = [n for stmt in self.import_time for n in statement_nodes(stmt)]
        return self._import_time_nodes

    def bodies_mentioning(self, text: str) -> Iterator[list]:
        """The bodies (module or function) whose own statements span a line holding ``text``;
        most bodies are not worth a walk."""
        lines = self._lines_with(text)
        return (body for body in self.bodies if _spans_any(body, lines))

    def bodies_spelling(self, spelling: Iterable[str]) -> Iterator[Tuple[str, list]]:
        """``(owner, body)`` for the bodies whose own statements span a line of the code where
        one of the words of ``spelling`` occurs (``lines_spelling``)."""
        lines = self.lines_spelling(spelling)
        return ((owner, body) for owner, body in zip(self.body_owners, self.bodies) if _spans_any(body, lines))

    def _lines_with(self, text: str) -> List[int]:
        """The (1-based, sorted) numbers of the lines where ``text`` occurs."""
        return self._line_numbers(self.source, offsets(self.source, text))

    def lines_spelling(self, spelling: Union[Iterable[str], "re.Pattern[str]"]) -> List[int]:
        """The (1-based, sorted) numbers of the lines of the code (docstrings blanked) where one
        of the words of ``spelling`` occurs, or where its pattern starts a match. Words are
        found by ``str.find``, which skips ahead to each occurrence: a regex of alternatives is
        tried at every position of the file."""
        code = self.code_text()
        if isinstance(spelling, re.Pattern):
            starts: Iterable[int] = (m.start() for m in spelling.finditer(code))
        else:
            starts = sorted(at for word in set(spelling) for at in offsets(code, word))
        return sorted(set(self._line_numbers(code, starts)))

    def statements_spelling(self, spelling: Union[Iterable[str], "re.Pattern[str]"], *, headers: bool = False,
                            recording: bool = False) -> Iterator[ast.AST]:
        """The nodes of the statements that span a line of ``lines_spelling`` (``nodes_on_lines``):
        what a gate about a call, keyword or name walks, where only the statements that spell it
        can hold it."""
        return self.nodes_on_lines(self.lines_spelling(spelling), recording=recording, headers=headers)

    @staticmethod
    def _line_numbers(source: str, offsets: Iterable[int]) -> List[int]:
        lines, line, counted = [], 1, 0
        for at in offsets:
            # Python ends lines at \n, \r\n and a lone \r.
            line += (source.count("\n", counted, at) + source.count("\r", counted, at)
                     - source.count("\r\n", counted, at))
            counted = at
            lines.append(line)
        return lines

    def nodes_on_lines(self, lines: List[int], recording: bool = False, headers: bool = False) -> Iterator[ast.AST]:
        """The nodes of the simple statements (and of compound statements' headers) that
        span one of ``lines`` (sorted), at any depth: a walk of a few statements where the
        rest of the file cannot hold what a question looks for. Decorators, defaults and
        bases are left out unless ``headers`` (a question about every call of the file);
        with ``recording``, so are blocks that turn grad off (``turns_grad_off``)."""
        todo = [self.bodies[0]] if lines else []
        while todo:
            for stmt in todo.pop():
                decorators = getattr(stmt, "decorator_list", None) if headers else None
                at = bisect.bisect_left(lines, decorators[0].lineno if decorators else stmt.lineno)
                if at == len(lines) or lines[at] > stmt.end_lineno:
                    continue
                if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                    if headers:
                        yield from definition_header_nodes(stmt)
                    todo.append(stmt.body)
                    continue
                if recording and isinstance(stmt, (ast.With, ast.AsyncWith)) and turns_grad_off(stmt):
                    continue
                if not _block_fields(type(stmt)):  # a simple statement
                    yield from own_nodes([stmt])
                    continue
                yield from statement_nodes(stmt)
                todo.extend(_child_blocks(stmt))

    # -- questions several rules ask (the shapes any rule may declare are in ``needs/``) --
    def evaluation_loops(self) -> bool:
        """A loop that runs a model-named call, or a name built by a constructor
        (``learner = Net()``), over evaluation data or in a function named like evaluation."""
        for function, loop in self.loops:
            if function in FORWARD_METHODS:
                continue
            evaluates = is_eval_function_name(function) or any(map(is_eval_loader_name, iterable_names(loop)))
            if evaluates and any(isinstance(n, ast.Call) and (may_be_forward(n) or forward_callee(n) in
                                                              self.constructed_names())
                                 for n in loop_nodes(loop)):
                return True
        return False

    def constructed_names(self) -> frozenset:
        """Names assigned an instance of a class or a wrapped model: ``learner = Net()``,
        ``net = DDP(Net().to(device))``, ``m = timm.create_model(...)`` (what ``roles`` reads
        in full)."""
        if self._constructed is None:
            self._constructed = frozenset(name for node in self.assignments for target in node.targets
                                          for name in _constructed_targets(target, node.value))
        return self._constructed

    def project_imports(self) -> frozenset:
        """Local names that top-level imports bind from modules that may be the project's own
        (``measure`` of ``from .metrics import measure``, ``utils`` of ``import utils``): not
        the standard library's, torch's or the usual libraries' around it."""
        if self._project_imports is None:
            found: Set[str] = set()
            for stmt in self.import_time:
                if isinstance(stmt, ast.ImportFrom) and (stmt.level or not _library(stmt.module or "")):
                    found.update(a.asname or a.name for a in stmt.names if a.name != "*")
                elif isinstance(stmt, ast.Import):
                    found.update((a.asname or a.name).split(".")[0] for a in stmt.names if not _library(a.name))
            self._project_imports = frozenset(found)
        return self._project_imports

    def names_from_project(self) -> Tuple[frozenset, bool]:
        """The local names imports anywhere in the file bind from modules that may be the
        project's own (relative ones, or not the standard library's, torch's or the usual
        libraries' around it), and whether a star import takes a whole such module."""
        found: Set[str] = set()
        star = False
        for stmt in self.imports:
            if isinstance(stmt, ast.ImportFrom):
                if stmt.level or not _library(stmt.module or ""):
                    found.update(a.asname or a.name for a in stmt.names if a.name != "*")
                    star = star or any(a.name == "*" for a in stmt.names)
            else:
                found.update((a.asname or a.name).split(".")[0] for a in stmt.names if not _library(a.name))
        return frozenset(found), star

    def project(self) -> Optional["ProjectView"]:
        """The file's view of its project's other modules (``model/project.py``), or None; the
        engine adds what a gate read through it to what the file's result depends on."""
        if self._project is None:
            from torchlint.model.project import ProjectLookup

            self._project = ProjectLookup(self.path)
        return self._project.view()

    def consulted_files(self) -> dict:
        """The project files read through ``project``, as ``FileModel.consulted_files``."""
        return self._project.consulted_files() if self._project is not None else {}

    def imported_from(self, callee: str) -> Optional[Tuple[str, int, str]]:
        """``names.Names.imported_from`` read off the ast's imports (at any depth)."""
        return imported_definition(self.derived(_import_origins), callee)

    def calls_of_imports(self, body) -> Iterator[ast.Call]:
        """Calls among ``body``'s own nodes of a name from ``project_imports`` (``f(...)``, ``m.f(...)``)."""
        imported = self.project_imports()
        if imported:
            for node in self.nodes_of(body):
                if isinstance(node, ast.Call) and (dotted(node.func) or "").split(".", 1)[0] in imported:
                    yield node

    def reached(self, names: Iterable[str]) -> Iterator[Tuple[ast.AST, List[ast.AST]]]:
        """``(definition, its nodes)`` for the functions and classes of this file named
        ``names`` and for what they may run in turn: the functions they call and, for a
        class, its bases (building it runs their ``__init__``). A tree knows calls by name
        only, so every definition of a name counts: more than Python would run, never less."""
        definitions, seen = self.definitions, set()
        todo = [name for name in names if name in definitions]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for definition in definitions[name]:
                nodes = all_nodes(definition)
                yield definition, nodes
                called = [called_name(n) for n in nodes if isinstance(n, ast.Call)]
                bases = [base_name(b) for b in getattr(definition, "bases", ())]
                todo.extend(n for n in (*called, *bases) if n is not None and n in definitions and n not in seen)

    def import_time_callees(self) -> Iterator[Optional[str]]:
        """The names import-time code calls (``f`` of ``f(x)`` and of ``m.f(x)``)."""
        return (called_name(n) for n in self.import_time_nodes() if isinstance(n, ast.Call))


# Libraries training code imports that are no project's own modules (the standard library's
# are in ``sys.stdlib_module_names``): calls of theirs need no project index.
_LIBRARIES = NON_TORCH_LIBRARIES | LIBRARIES_AROUND_TORCH


def _import_origins(tree_index: TreeIndex) -> Dict[str, Tuple[str, Optional[str], int]]:
    """local name -> (module, imported name or None for a module, relative level)."""
    origins: Dict[str, Tuple[str, Optional[str], int]] = {}
    for stmt in tree_index.imports:
        for alias in stmt.names:
            if isinstance(stmt, ast.ImportFrom):
                if alias.name != "*":
                    origins[alias.asname or alias.name] = (stmt.module or "", alias.name, stmt.level)
            elif alias.asname:
                origins[alias.asname] = (alias.name, None, 0)
            else:  # as ``names.Names.add_import``: the first plain import of a root keeps it
                root = alias.name.split(".", 1)[0]
                origins.setdefault(root, (root, None, 0))
    return origins


def _library(module: str) -> bool:
    root = module.split(".", 1)[0]
    return root in _LIBRARIES or root in sys.stdlib_module_names


# -- reading nodes: for the questions here and the rules' own ---------------

# Fields that never hold a node worth reading: names and flags (strings, numbers) and
# the operator and context singletons (``ctx``, ``op``, ``ops``), which every question
# reads off their owner (``node.op``), never finds on a walk: a third of a tree's nodes,
# which the walks no longer visit (a tenth less time for the tree questions).
# (``name`` stays: Python 3.12's ``type X = ...`` holds a Name there.)
_NOT_CHILDREN = frozenset(("ctx", "op", "ops", "id", "attr", "arg", "asname", "module", "level", "kind",
                           "type_comment", "is_async", "conversion", "simple", "tag"))
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(node: ast.AST) -> Tuple[str, ...]:
    """The fields of ``node``'s type that may hold nodes, kept per type."""
    names = _CHILD_FIELDS[type(node)] = tuple(name for name in node._fields if name not in _NOT_CHILDREN)
    return names


def own_nodes(nodes) -> Iterator[ast.AST]:
    """Every node of the scope ``nodes`` belong to: not into nested functions (scopes
    of their own), but into class bodies, which run where they are written. Operator and
    context nodes are left out (``_NOT_CHILDREN``)."""
    todo = [node for node in nodes if not isinstance(node, _FUNCTIONS)]
    pop, push, node_type, child_fields = todo.pop, todo.append, ast.AST, _CHILD_FIELDS.get
    while todo:
        node = pop()
        yield node
        # ``ast.iter_child_nodes``'s order, without its two generators per node: the
        # gates walk most nodes of a training file, and this loop is most of their time.
        names = child_fields(type(node))
        for name in _child_fields(node) if names is None else names:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, node_type) and not isinstance(child, _FUNCTIONS):
                        push(child)
            elif isinstance(value, node_type) and not isinstance(value, _FUNCTIONS):
                push(value)


def all_nodes(node: ast.AST) -> List[ast.AST]:
    """``list(ast.walk(node))`` in another order, about twice as fast (see ``own_nodes``),
    without the operator and context nodes (``_NOT_CHILDREN``)."""
    found: List[ast.AST] = []
    todo, node_type, child_fields = [node], ast.AST, _CHILD_FIELDS.get
    pop, push, keep = todo.pop, todo.append, found.append
    while todo:
        node = pop()
        keep(node)
        names = child_fields(type(node))
        for name in _child_fields(node) if names is None else names:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, node_type):
                        push(child)
            elif isinstance(value, node_type):
                push(value)
    return found


_REPEATING = (*LOOPS, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def repeated_calls(nodes: List[ast.AST]) -> Set[int]:
    """The ids of the calls among a scope's own ``nodes`` (``TreeIndex.nodes_of``) that may run
    more than once there: in a loop (its header too), a comprehension or a lambda
    (``FileModel.repeats``'s own part)."""
    found: Set[int] = set()
    for node in nodes:
        if isinstance(node, _REPEATING):
            found.update(id(n) for n in own_nodes([node]) if isinstance(n, ast.Call))
    return found


def definition_header_nodes(definition: Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]) -> Iterator[ast.AST]:
    """The nodes of a function's decorators and defaults, of a class's decorators and bases:
    what runs where the definition is written (annotations left out)."""
    parts = list(definition.decorator_list)
    if isinstance(definition, ast.ClassDef):
        parts += definition.bases + [k.value for k in definition.keywords]
    else:
        parts += definition.args.defaults + [d for d in definition.args.kw_defaults if d is not None]
    return (n for part in parts for n in all_nodes(part))


def loop_nodes(loop) -> Iterator[ast.AST]:
    """The nodes of a loop's body and ``else`` that run in its scope."""
    return own_nodes(loop.body + loop.orelse)


def _child_blocks(stmt: ast.stmt) -> Iterator[list]:
    """The statement lists directly inside ``stmt``: each statement of its blocks on its
    own, and the body of each except handler or match case (a block of its own)."""
    for field in _block_fields(type(stmt)):
        for child in getattr(stmt, field):
            yield [child] if isinstance(child, ast.stmt) else child.body


def _child_statements(stmt: ast.stmt) -> List[ast.stmt]:
    """The statements directly inside ``stmt``, in ``_child_blocks``'s order, an except
    handler's or a match case's included."""
    children = []
    for field in _block_fields(type(stmt)):
        for child in getattr(stmt, field):
            if isinstance(child, ast.stmt):
                children.append(child)
            else:
                children.extend(child.body)
    return children


def _fields_of_blocks(kind: Type[ast.AST]) -> Tuple[str, ...]:
    """The fields of ``_BLOCK_FIELDS`` a kind of statement has (none for simple statements)."""
    return tuple(field for field in _BLOCK_FIELDS if field in kind._fields)


# Cached per class. The cast: mypy does not take a class object for ``Hashable``.
_block_fields = cast("Callable[[Type[ast.AST]], Tuple[str, ...]]", functools.lru_cache(maxsize=None)(_fields_of_blocks))


def own_statements(body: list) -> Iterator[ast.stmt]:
    """The statements of a scope's ``body`` at any depth (class bodies in, nested
    functions out): ``own_nodes`` without the expressions, for questions about
    statements (assignments, ``if``s)."""
    todo = list(body)
    while todo:
        stmt = todo.pop()
        if isinstance(stmt, _FUNCTIONS):
            continue
        yield stmt
        todo.extend(_child_statements(stmt))


def loop_statements(loop) -> Iterator[ast.stmt]:
    """The statements of a loop's body and ``else`` that run in its scope."""
    return own_statements(loop.body + loop.orelse)


def statement_nodes(stmt) -> Iterator[ast.AST]:
    """A statement's own expressions; the statements of its blocks are scanned on their own."""
    if isinstance(stmt, LOOPS + (ast.If, ast.With, ast.AsyncWith, ast.Try)):
        yield stmt
        for field in ("target", "iter", "test", "items"):
            value = getattr(stmt, field, None)
            if value is not None:
                yield from own_nodes(value if isinstance(value, list) else [value])
        return
    yield from own_nodes([stmt])


def turns_grad_off(block) -> bool:
    """``with torch.no_grad():`` or ``with torch.inference_mode():`` around code that turns
    grad back on nowhere (no ``enable_grad``, ``set_grad_enabled``, ``inference_mode(False)``)."""
    if not any(isinstance(item.context_expr, ast.Call) and grad_off_item(item.context_expr) for item in block.items):
        return False
    return not any(isinstance(n, ast.Call) and called_name(n) in _GRAD_SWITCHES for n in own_nodes(block.body))


_GRAD_SWITCHES = frozenset(("enable_grad", "set_grad_enabled", "inference_mode"))
_GRAD_HINTS = ("no_grad", "inference", "grad_enabled", "enable_grad", "eval_mode")  # grad.classify's


def runs_without_grad(function) -> bool:
    """``@torch.no_grad()`` (or ``@torch.inference_mode()``) on a function whose body turns
    grad back on nowhere: ``grad.classify`` reads its decorators as no-grad, and no call in
    it records. A decorator ``classify`` might read otherwise (``@smart_inference_mode()``)
    leaves it unsure: False."""
    off = False
    for decorator in function.decorator_list:
        if grad_off_item(decorator):
            off = True
        elif any(hint in name for name in names_in(decorator) for hint in _GRAD_HINTS):
            return False
    return off and not any(isinstance(n, ast.Call) and called_name(n) in _GRAD_SWITCHES
                           for n in own_nodes(function.body))


def train_mode_flags(call: ast.Call) -> list:
    """What ``m.train(...)`` may take its mode from, as ``modes.mode_switch`` reads it: the
    positional arguments and ``mode=``."""
    return [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]


def names_in(node: ast.AST) -> Iterator[str]:
    """Every name and attribute name under ``node`` (``model``, ``x_test`` and ``cuda`` in
    ``model(x_test.cuda())``)."""
    for n in all_nodes(node):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr


def called_name(call: ast.Call) -> Optional[str]:
    """``f`` of ``f(x)`` and of ``a.b.f(x)``; None for ``fs[0](x)``."""
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def base_name(node: ast.AST) -> Optional[str]:
    """``Module`` of ``nn.Module`` and of ``Module``; None for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


dotted = ast_dotted  # ``a.b.c`` for a chain of attributes on a name, else None


def iterable_names(loop) -> Tuple[str, ...]:
    """Every name and attribute name in what a ``for`` iterates over; none for ``while``."""
    node = getattr(loop, "iter", None)
    return () if node is None else tuple(names_in(node))


_BUILDERS = frozenset(("create_model", "from_pretrained", "compile", "deepcopy", "to", "cuda"))


def _constructed_targets(target, value) -> Iterator[str]:
    """Names ``target = value`` binds to built instances; ``a, b = Net(), Net()`` element-wise."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _constructed_targets(t, v)
    elif isinstance(value, ast.Call) and _builds(value):
        name = dotted(target)
        if name:
            yield name


def _builds(call: ast.Call) -> bool:
    name = called_name(call) or ""
    if name in ("to", "cuda") and isinstance(call.func, ast.Attribute):
        inner = call.func.value
        return isinstance(inner, ast.Call) and _builds(inner)
    return name[:1].isupper() or name in _BUILDERS


def may_be_forward(call: ast.Call) -> bool:
    """``model(x)``, ``self.net.module(x)``, ``self(x)``: what ``FileModel.is_forward`` can accept."""
    callee = forward_callee(call)
    return callee is not None and (callee == "self" or is_model_name(last_name(callee)))


def forward_callee(call: ast.Call) -> Optional[str]:
    """The model a call would run forward: ``model`` for ``model.module.forward(x)``."""
    callee = dotted(call.func)
    return called_module(callee) if callee is not None else None


# Receivers whose ``compile`` is not torch's: regular expressions, the commonest.
def _is_long_string_statement(stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str) and (stmt.end_lineno or 0) - stmt.lineno >= 2)


def offsets(source: str, text: str) -> Iterator[int]:
    """Where ``text`` starts in ``source``, each occurrence."""
    at = source.find(text)
    while at >= 0:
        yield at
        at = source.find(text, at + 1)


def _spans_any(body: list, lines: List[int]) -> bool:
    """Does one of ``lines`` fall within the statements of ``body``?"""
    if not body:
        return False
    first = getattr(body[0], "lineno", 1)
    last = getattr(body[-1], "end_lineno", None) or 1 << 30
    at = bisect.bisect_left(lines, first)
    return at < len(lines) and lines[at] <= last


# -- losses fed an activation (TL801, TL802) ----------------------------------------

def activation_may_reach_loss(tree_index: TreeIndex, loss: str, activation: str) -> bool:
    """Could a value that went through ``activation`` (``softmax``, ``sigmoid``) last be the input
    of a ``loss`` call (a kind of ``vocab.PAIRED_LOSSES``), as ``model/activations.py`` follows it?

    Only through the input of a call that may compute the loss (its functional form, a name
    the file binds to the loss's class, an inline construction, a parameter) ending in it. "Ends in" reads the value as the tracer does: through reshapes and indexing, and for a
    name through the last binding before the read in the same scope (the tracer needs every
    binding that may reach the read to agree, and that one always may). A call ends in it as
    ``_EndingCalls`` grows them: the activation, a function of the file that returns it, a
    module that ends in it. Transformers' modeling files, which all compute a softmax for
    attention (and hand it back from an attention module) and a cross-entropy on a linear
    head, mostly stop here."""
    functions = {q.rsplit(".", 1)[-1] for q, kind in PAIRED_LOSSES.items() if kind == loss and _lower(q)}
    classes = {q.rsplit(".", 1)[-1] for q, kind in PAIRED_LOSSES.items() if kind == loss and not _lower(q)}
    calls = {q.rsplit(".", 1)[-1] for q, kind in (*ACTIVATION_FUNCTIONS.items(), *ACTIVATION_METHODS.items())
             if kind == activation}
    layers = {name for name, kind in ACTIVATION_LAYERS.items() if kind == activation}
    # Every body's own nodes (walked once, for the readers too): the file's nodes but the
    # functions' headers, whose defaults and decorators the tracer does not follow.
    nodes = [n for body in tree_index.bodies for n in tree_index.nodes_of(body)]
    bound = _bound_to(nodes, classes)
    params = {a.arg for defined in tree_index.definitions.values() for n in defined if isinstance(n, _FUNCTIONS)
              for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs)}
    ending = _EndingCalls(tree_index, nodes, calls, layers, params)
    for body in tree_index.bodies:
        reader = ending.reader(body)
        if reader is None:
            continue  # a value ends in the activation only through a call of it in the same scope
        for node in reader.nodes:
            if isinstance(node, ast.Call) and _may_compute(node, functions, bound, params):
                value = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else next(
                    (k.value for k in node.keywords if k.arg == "input"), None)
                if value is not None and reader.ends_in(value, node, 0):
                    return True
    return False


class _EndingCalls:
    """Which calls of a file may end in an activation, grown to a fixed point as the tracer
    follows them: calls of the activation (``F.softmax``); calls of a function or method of
    the file some ``return`` of which ends in one (matched by name); and calls that may run a
    module ending in one (``may_run_module``): a layer of it (``nn.Softmax``), or a class of the
    file whose ``forward`` (its own or a base's) returns one, with ``self(x)`` inside a class."""

    def __init__(self, tree_index: TreeIndex, nodes: List[ast.AST], calls: Set[str], layers: Set[str],
                 params: Set[str]) -> None:
        self.tree_index, self.nodes = tree_index, nodes
        self.functions = set(calls)  # names whose call ends in the activation: read in place by the readers
        self.modules = set(layers)  # classes whose instances' calls do
        self.holders: Set[str] = set()  # last names of what may hold one of ``modules``
        self.params = params
        self.built = False  # is one of ``modules`` built anywhere (or a class of the file one)?
        self._readers: Dict[int, Optional[_LastBinding]] = {}
        self._called = {called_name(n) for n in nodes if isinstance(n, ast.Call)}
        self._called_in: Dict[int, Set[Optional[str]]] = {}  # id of a body -> the names its calls call
        self._bindings: Optional[List[Tuple[Set[str], ast.AST]]] = None  # ``_holder_bindings``, once needed
        self._held = 0  # how many of ``modules`` the holders were last grown for
        forwards = {id(stmt.body): cls for defined in tree_index.definitions.values() for cls in defined
                    if isinstance(cls, ast.ClassDef) for stmt in cls.body
                    if isinstance(stmt, _FUNCTIONS) and stmt.name == "forward"}
        subclasses: Dict[str, Set[str]] = {}
        for defined in tree_index.definitions.values():
            for cls in defined:
                if isinstance(cls, ast.ClassDef):
                    for base in cls.bases:
                        subclasses.setdefault((ast_dotted(base) or "").rsplit(".", 1)[-1], set()).add(cls.name)
        self._grow(forwards, subclasses)

    def _grow(self, forwards: Dict[int, ast.ClassDef], subclasses: Dict[str, Set[str]]) -> None:
        pending = list(zip(self.tree_index.bodies[1:], self.tree_index.body_owners[1:]))
        grown = True
        while grown:
            grown = False
            self._hold()
            for body, owner in list(pending):
                reader = self.reader(body)
                if reader is None or not any(isinstance(n, ast.Return) and n.value is not None
                                             and reader.ends_in(n.value, n, 0) for n in reader.nodes):
                    continue
                pending.remove((body, owner))
                grown = True
                cls = forwards.get(id(body))
                if cls is None:
                    self.functions.add(owner)
                    continue
                todo = [cls.name]
                while todo:  # a subclass's instances run the base's forward, unless it has its own
                    name = todo.pop()
                    if name not in self.modules:
                        self.modules.add(name)
                        todo.extend(subclasses.get(name, ()))
                self.holders.add("self")
                self.built = True

    def _hold(self) -> None:
        if self._held == len(self.modules):
            return  # ``modules`` only grows
        self._held = len(self.modules)
        if not self._called.isdisjoint(self.modules):
            if self._bindings is None:
                self._bindings = _holder_bindings(self.nodes)
            self.holders |= _layer_holders(self._bindings, self.modules)
            self.built = True

    def may_run_module(self, call: ast.Call) -> bool:
        """``self.softmax(x)``, ``self.head.forward(x)``, ``nn.Softmax(1)(x)``, ``act(x)`` (a
        parameter: its callers may pass one), once one of ``modules`` is built."""
        if not self.built:
            return False
        if isinstance(call.func, ast.Call):
            return True
        path = ast_dotted(call.func)
        holder = called_module(path) if path is not None else None
        return holder is not None and (holder.rsplit(".", 1)[-1] in self.holders or holder in self.params)

    def reader(self, body: list) -> Optional["_LastBinding"]:
        """How the values of ``body`` end; None while nothing there can end in the activation."""
        reader = self._readers.get(id(body))
        if reader is None:
            own = self.tree_index.nodes_of(body)
            called = self._called_in.get(id(body))
            if called is None:
                called = self._called_in[id(body)] = {called_name(n) for n in own if isinstance(n, ast.Call)}
            if not self.built and called.isdisjoint(self.functions):
                return None  # asked again once more calls end in it
            reader = self._readers[id(body)] = _LastBinding(own, self.functions, self.may_run_module)
        return reader


def _holder_bindings(nodes: List[ast.AST]) -> List[Tuple[Set[str], ast.AST]]:
    """(the last names a statement binds, the value they get) for every assignment and loop
    variable of ``nodes``: what ``_layer_holders`` grows its holders over."""
    bindings: List[Tuple[Set[str], ast.AST]] = []
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            targets, value = assignment_targets(node), node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets, value = [node.target], node.iter
        else:
            continue
        names = {p.rsplit(".", 1)[-1] for t in targets for single in flat_targets(t) for p in [ast_dotted(single)] if p}
        bindings.append((names, value))
    return bindings


def _layer_holders(bindings: List[Tuple[Set[str], ast.AST]], layers: Set[str]) -> Set[str]:
    """The last names of the paths ``bindings`` bind to what may be a layer of ``layers``
    (``_may_hold``), or be a loop variable over one."""
    holders: Set[str] = set()
    grown = True
    while grown:  # an alias of a holder, a container of one, ... holds it too
        grown = False
        for names, value in bindings:
            if not names <= holders and _may_hold(value, layers, holders):
                holders |= names
                grown = True
    return holders


def _may_hold(value: ast.AST, layers: Set[str], holders: Set[str]) -> bool:
    """May ``value`` be a layer of ``layers``, or a container, wrapper or ``nn.Sequential`` of
    one: its construction, a name of ``holders`` (by last name), moved or wrapped, in a list,
    a dict, a conditional. What a call of a module returns (``self.softmax(x)``) is no layer."""
    if isinstance(value, ast.Call):
        if called_name(value) in layers:
            return True
        if isinstance(value.func, ast.Attribute) and value.func.attr in _MOVES:
            return _may_hold(value.func.value, layers, holders)
        if isinstance(value.func, ast.Call) or called_name(value) in holders:
            return False  # a forward: its output
        return any(_may_hold(arg, layers, holders) for arg in (*value.args, *(k.value for k in value.keywords)))
    if isinstance(value, (ast.Name, ast.Attribute)):
        path = ast_dotted(value)
        return path is not None and path.rsplit(".", 1)[-1] in holders
    if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.IfExp, ast.BoolOp, ast.Starred, ast.Subscript,
                          ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.comprehension)):
        return any(_may_hold(child, layers, holders) for child in ast.iter_child_nodes(value)
                   if isinstance(child, ast.expr))
    return False


def _lower(qualified: str) -> bool:
    return qualified.rsplit(".", 1)[-1][:1].islower()


def _bound_to(nodes: List[ast.AST], classes: Set[str]) -> Set[str]:
    """Dotted names assigned an instance of one of ``classes`` (through ``.to(device)`` and the
    like; one of several bound at once too: ``adv, aux = nn.BCELoss(), nn.CrossEntropyLoss()``)."""
    found: Set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in assignment_targets(node):
                for bound, value in _paired(target, node.value):
                    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                            and value.func.attr in _MOVES:
                        value = value.func.value
                    path = ast_dotted(bound)
                    if path and isinstance(value, ast.Call) and called_name(value) in classes:
                        found.add(path)
    return found


def _may_compute(call: ast.Call, functions: Set[str], bound: Set[str], params: Set[str]) -> bool:
    """Might this call compute the loss: its functional form, an inline construction
    (``nn.CrossEntropyLoss()(x, y)``), a name bound to its class, or a parameter?"""
    if isinstance(call.func, ast.Call):
        return True
    name = called_name(call)
    callee = ast_dotted(call.func)
    return name in functions or callee in bound or (isinstance(call.func, ast.Name) and call.func.id in params)


class _LastBinding:
    """Reads what a value of one scope ends in, following a name to its last binding before the read."""

    def __init__(self, nodes: List[ast.AST], activations: Set[str],
                 runs_module: Optional[Callable[[ast.Call], bool]] = None) -> None:
        self.nodes = nodes
        self.activations = activations  # names of the calls that end in it (read as they grow)
        self.runs_module = runs_module  # does a call run a module that ends in it?
        # path -> [(where the binding statement starts, where it ends, the value bound or None)]
        self.bindings: Dict[str, List[Tuple[Tuple[int, int], Tuple[int, int], Optional[ast.AST]]]] = {}
        for node in nodes:
            if not isinstance(node, ast.stmt):
                continue
            for target, value in _bindings(node):
                path = ast_dotted(target)
                if path is not None:
                    start = (node.lineno, node.col_offset)
                    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
                    self.bindings.setdefault(path, []).append((start, end, value))

    def ends_in(self, value: ast.AST, read: Union[ast.expr, ast.stmt], depth: int) -> bool:
        return self._ends_in(value, (read.lineno, read.col_offset), depth)

    def _ends_in(self, value: ast.AST, at: Tuple[int, int], depth: int) -> bool:
        """Does ``value``, read at position ``at``, end in the activation?"""
        if depth > 12:
            return False
        if isinstance(value, ast.Subscript):
            return self._ends_in(value.value, at, depth + 1)
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(self._ends_in(e, at, depth + 1) for e in value.elts)
        if isinstance(value, ast.Call):
            name = called_name(value)
            if name in self.activations or self.runs_module is not None and self.runs_module(value):
                return True
            if name in LAYOUT_METHODS and isinstance(value.func, ast.Attribute):
                return self._ends_in(value.func.value, at, depth + 1)
            return False  # a model or helper: its returns and layers are asked on their own
        path = ast_dotted(value)
        before = [b for b in self.bindings.get(path or "", ()) if b[1] <= at]
        if not before:
            return False
        start, _, bound = max(before, key=lambda b: b[1])
        return bound is not None and self._ends_in(bound, start, depth + 1)


def _bindings(node: ast.stmt) -> Iterator[Tuple[ast.AST, Optional[ast.AST]]]:
    """(target, the value it gets, None when the statement does not say) for a binding statement."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _paired(target, node.value)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, ast.AugAssign):
        yield node.target, None
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        for single in flat_targets(node.target):
            yield single, None
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        for item in node.items:  # ``with make() as m``: ``m`` is what ``make()`` hands back, as the tracer reads it
            if item.optional_vars is not None:
                yield from _paired(item.optional_vars, item.context_expr)


def _paired(target: ast.AST, value: ast.AST) -> Iterator[Tuple[ast.AST, Optional[ast.AST]]]:
    """What each name of ``target`` gets, as ``constructions._unpack`` pairs them: the element of
    a literal tuple of the same length, else (``probs, aux = model(x)``) one element of the
    value, which ends in what the whole value may; nothing known past a star or a nested tuple."""
    if not isinstance(target, (ast.Tuple, ast.List)):
        yield target, value
        return
    pairs = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
    starred = any(isinstance(element, ast.Starred) for element in target.elts)
    for i, element in enumerate(target.elts):
        if starred or (pairs is None and isinstance(element, (ast.Tuple, ast.List))):
            for single in flat_targets(element):
                yield single, None
        elif pairs is not None:
            yield from _paired(element, pairs[i])
        else:
            yield element, value
