"""Edits to a parsed module: what rules build their fixes from, and how edits are applied.

*Building* (rule modules): where torch is bound in the file
(:func:`torch_reference`), which statement holds a node
(:func:`enclosing_statement`), and small constructors for the edits rules
need (wrap in ``with``, insert a statement before another, call a method on
an expression, drop a keyword argument).

*Applying* (the fix loop in ``fixer.py``): replace nodes by identity,
rebuilding only their ancestors (:func:`apply_edits`), and add the imports
new code needs (:func:`add_imports`).

This module sits just above the model: it imports nothing from rules, the
engine, the fix loop or any front end.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union, cast

import libcst as cst

from torchlint.model.expr import bound_paths, dotted
from torchlint.model.legacy import variable_data, volatile_flag
from torchlint.model.names import from_import_bindings
from torchlint.model.tree import suspends_here
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Scope

# A statement of a block (what a module or an indented body holds).
Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


class FixError(Exception):
    """A fix that cannot be applied to the tree it was built for."""


# ---------------------------------------------------------------------------
# Building fixes: helpers for rule modules
# ---------------------------------------------------------------------------

def parent_map(file_model: FileModel) -> Dict[int, cst.CSTNode]:
    """``id(node) -> parent`` for every syntax node of the model's module (the model's walk records it)."""
    return file_model.parents


def parents_of(module: cst.Module) -> Dict[int, cst.CSTNode]:
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


def enclosing_statement(file_model: FileModel, node: Optional[cst.CSTNode]) -> Optional[Statement]:
    """The statement of a block (module or indented body) that holds ``node``.

    ``None`` for a node in a one-line suite (``if x: f()``), where no
    statement can be wrapped or inserted without rewriting the suite.
    """
    parents = parent_map(file_model)
    while node is not None:
        parent = parents.get(id(node))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
                parent, (cst.Module, cst.IndentedBlock)):
            return node
        if isinstance(parent, cst.SimpleStatementSuite):
            return None
        node = parent
    return None


def top_level_imports(module: cst.Module) -> List[Union[cst.Import, cst.ImportFrom]]:
    """``import``/``from`` statements at module level, including inside top-level ``if``/``try``;
    not those under ``if TYPE_CHECKING:``, which bind nothing when the program runs."""
    found: List[Union[cst.Import, cst.ImportFrom]] = []

    def scan(body: Iterable[cst.CSTNode]) -> None:
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                found.extend(s for s in stmt.body if isinstance(s, (cst.Import, cst.ImportFrom)))
            elif isinstance(stmt, cst.If) and _type_checking_only(stmt.test):
                if isinstance(stmt.orelse, cst.Else):
                    scan(stmt.orelse.body.body)  # what runs when the program does
            elif isinstance(stmt, (cst.If, cst.Try)):
                scan(stmt.body.body)
                if isinstance(stmt, cst.Try):
                    for handler in stmt.handlers:
                        scan(handler.body.body)

    scan(module.body)
    return found


def _type_checking_only(test: cst.BaseExpression) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``: true only for type checkers."""
    return (dotted(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"


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


def torch_reference(file_model: FileModel, attr: str = "") -> Tuple[str, Tuple[str, ...]]:
    """How generated code in this file should name ``torch.<attr>``, and the imports it needs.

    ``import torch as T`` gives ``("T.no_grad", ())``; ``from torch import
    no_grad`` gives ``("no_grad", ())``; a file without a top-level torch
    binding gives ``("torch.no_grad", ("torch",))`` and the fixer adds
    ``import torch``.
    """
    bindings = file_model.derived(_top_level_bindings)
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


def _top_level_bindings(file_model: FileModel) -> Dict[str, str]:
    return module_bindings(file_model.module)


def shadowed(scope, name: str) -> bool:
    """Does a function around the edit rebind ``name`` (a parameter, an assignment, a loop
    or ``with`` target), so that generated code naming the module's ``name`` would reach
    the local value instead? ``scope`` is a ``model.Scope``."""
    while scope is not None and not scope.is_module:
        if name in scope.params:
            return True
        for a in scope.assignments:
            if a.kind != "del" and any(path == name for t in a.targets for path in bound_paths(t)):
                return True
        scope = scope.parent
    return False


def renamed_reference(file_model: FileModel, scope: Optional[Scope], written: Optional[str], old: str, new: str
                      ) -> Optional[Tuple[cst.BaseExpression, Tuple[str, ...]]]:
    """How to write ``new`` (a qualified torch name) where the code wrote ``written``
    (which means ``old``), and the imports that needs; None where it cannot be said.

    Keeps the code's own spelling where it reaches the new name too
    (``nn.init.normal`` -> ``nn.init.normal_``, ``F.upsample`` ->
    ``F.interpolate``); otherwise names it from torch (``torch.amp.autocast``),
    adding ``import torch`` where the file lacks it.
    """
    if written is None:  # a call of something unnamed: no spelling to keep
        return None
    head, _, rest = written.partition(".")
    bound = file_model.names.aliases.get(head)
    if bound is not None and (f"{bound}.{rest}" if rest else bound) == old and new.startswith(bound + "."):
        return dotted_expression(head + new[len(bound):]), ()
    text, imports = torch_reference(file_model, new[len("torch."):])
    if shadowed(scope, text.split(".", 1)[0]):
        return None
    return dotted_expression(text), imports


def as_argument(expr: cst.BaseExpression) -> cst.BaseExpression:
    """An operand moved into a call's argument list: one pair of parentheses, which only
    precedence needed, is dropped (``(a + b).exp()`` -> ``f(a + b)``)."""
    return expr.with_changes(lpar=(), rpar=()) if len(expr.lpar) == 1 else expr


def wrap_in_with(stmt: Statement, manager: str) -> cst.With:
    """``with <manager>():`` around ``stmt`` (``manager``: a dotted name, ``torch.no_grad``);
    comments above ``stmt`` stay above the ``with``."""
    inner = stmt.with_changes(leading_lines=())
    return cst.With(
        items=[cst.WithItem(item=cst.Call(func=dotted_expression(manager)))],
        body=cst.IndentedBlock(body=[inner]),
        leading_lines=stmt.leading_lines,
    )


def insert_before(stmt: cst.CSTNode, *codes: str) -> cst.FlattenSentinel:
    """Simple statements (``codes``) placed just before ``stmt``, which keeps its comments.

    ``stmt`` may be a statement of a block or a small statement of a one-line suite.
    """
    # The cast: ``codes`` are simple statements (one line each), by this function's contract.
    lines = [cast(cst.SimpleStatementLine, cst.parse_statement(code)) for code in codes]
    if isinstance(stmt, cst.BaseSmallStatement):
        smalls = [line.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for line in lines]
        return cst.FlattenSentinel([*smalls, stmt])
    return cst.FlattenSentinel([*lines, stmt])


def insert_after(stmt: cst.BaseStatement, *codes: str) -> cst.FlattenSentinel:
    """Simple statements (``codes``) placed just after ``stmt``, a statement of a block."""
    return cst.FlattenSentinel([stmt, *(cst.parse_statement(code) for code in codes)])


def source_of(node: cst.CSTNode) -> str:
    """The code of one node, for fix descriptions."""
    return cst.Module(body=()).code_for_node(node)


def first_statement(body: cst.BaseSuite) -> Optional[cst.CSTNode]:
    """The first statement of a block body (a small statement for a one-line suite)."""
    return body.body[0] if body.body else None


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def dotted_expression(name: str) -> Union[cst.Name, cst.Attribute]:
    """The expression ``name`` (``torch.no_grad``) spells, as ``cst.parse_expression`` would
    build it, without a parse (two fifths of the cost of TL101's fix, built per finding); the
    fixes name torch's functions and dtypes through it."""
    first, *rest = name.split(".")
    expression: Union[cst.Name, cst.Attribute] = cst.Name(first)
    for part in rest:
        expression = cst.Attribute(value=expression, attr=cst.Name(part))
    return expression


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


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``name=value`` added last: ``torch.load(f)`` -> ``torch.load(f, weights_only=True)``."""
    no_space = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return call.with_changes(args=(*call.args, cst.Arg(keyword=cst.Name(name), value=value, equal=no_space)))


def suspends(node: cst.CSTNode) -> bool:
    """Does ``node`` suspend its own function (not nested defs): a ``yield``, an ``await``,
    or an ``async for``/``async with``/async comprehension, which await implicitly?

    A ``with torch.no_grad()`` around one would leave grad mode off in the
    caller, or in whatever else runs while the generator or coroutine waits:
    grad mode belongs to the thread, not to the coroutine.
    """
    found: List[cst.CSTNode] = []
    skip: List[cst.CSTNode] = []

    def enter(n: cst.CSTNode) -> None:
        if skip:
            skip.append(n)
            return
        if isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and n is not node:
            skip.append(n)
        elif suspends_here(n):
            found.append(n)

    def leave(n):
        if skip and skip[-1] is n:
            skip.pop()

    walk(node, enter, leave)
    return bool(found)


_ATOMIC = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer, cst.Float)


class VolatileUnwrapper(cst.CSTTransformer):
    """Replaces ``Variable(x, volatile=...)`` with ``x`` (parenthesised where needed).

    ``flags`` says which calls go: literal ``volatile=True`` only (``{True}``),
    or also a computed flag (``"unknown"``) where no_grad is being added anyway;
    the flag has been a no-op since PyTorch 0.4, so ``x`` is the same tensor.
    """

    def __init__(self, file_model: FileModel, flags=frozenset({True})) -> None:
        super().__init__()
        self.file_model = file_model
        self.flags = flags
        self.replaced: set = set()

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        site = self.file_model.call_of(original)
        if site is None or volatile_flag(self.file_model, site) not in self.flags:
            return updated
        if self.file_model.qualify(site) is None:
            return updated  # through a lambda, which may also move the tensor (``.cuda()``)
        data = variable_data(updated)
        if data is None:
            return updated
        self.replaced.add(id(original))
        if isinstance(data, _ATOMIC) or data.lpar:
            return data
        return data.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def is_self_assignment(stmt) -> bool:
    """``images = images``: what ``images = Variable(images, volatile=True)`` unwraps to."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    assign = stmt.body[0]
    return isinstance(assign, cst.Assign) and len(assign.targets) == 1 and (
        dotted(assign.targets[0].target) is not None
        and dotted(assign.targets[0].target) == dotted(assign.value)
    )


def _wraps_volatile_variables(file_model: FileModel, flags: frozenset) -> bool:
    """Does some call of the file wrap a tensor in a ``Variable`` whose ``volatile`` flag is one of
    ``flags``: what ``VolatileUnwrapper`` would replace?"""
    return any(volatile_flag(file_model, call) in flags for call in file_model.calls)


class _SelfAssignmentRemover(cst.CSTTransformer):
    def leave_SimpleStatementLine(self, original, updated):
        return cst.RemoveFromParent() if is_self_assignment(updated) else updated


def without_volatile(file_model: FileModel, stmt: Statement) -> Statement:
    """``stmt`` with every ``Variable(x, volatile=...)`` in it replaced by ``x``, and the
    ``x = x`` lines that leaves dropped: for a fix that puts ``stmt`` under no_grad."""
    flags = frozenset({True, "unknown"})
    if not file_model.derived(_wraps_volatile_variables, flags):
        return stmt  # nothing to unwrap anywhere: no transformer rebuilding the statement to the same code
    unwrapper = VolatileUnwrapper(file_model, flags)
    # The casts: the unwrapper replaces expressions only, and ``stmt`` holds the evaluation
    # the fix wraps, so it is never itself an ``x = x`` line that the remover drops.
    new = cast(Statement, stmt.visit(unwrapper))
    return cast(Statement, new.visit(_SelfAssignmentRemover())) if unwrapper.replaced else new


def apply_edits(module: cst.Module, edits: Dict[int, object], parents: Optional[dict] = None) -> cst.Module:
    """Replace nodes by identity, rebuilding only their ancestors; the rest is shared untouched."""
    if not edits:
        return module
    parents = parents if parents is not None else parents_of(module)
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
                items: List[Any] = []
                changed, dropped_last = False, None
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


def lone_call_statement(file_model: FileModel, node: cst.Call) -> Optional[cst.SimpleStatementLine]:
    """The statement line of a block that is nothing but the call ``node`` (``opt.step()`` on a
    line of its own): a statement a fix can move, replace or insert next to. None otherwise."""
    stmt = enclosing_statement(file_model, node)
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and small.value is node:
            return stmt
    return None
