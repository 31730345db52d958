"""One pass over the libcst tree that fills the records of ``records.py``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

import libcst as cst

from torchlint.model.dead_code import dead_suites
from torchlint.model.expr import dotted
from torchlint.model.records import Assignment, CallSite, Loop, Scope, Site
from torchlint.model.tree import suspends_here
from torchlint.model.walk import walk_parented
from torchlint.model.grad import classify, classify_statement_call

if TYPE_CHECKING:
    from torchlint.model import FileModel

_BLOCKS = frozenset((cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite))
# Kept by exact type: isinstance against libcst's abstract bases goes through ABCMeta,
# and on_visit runs for every node. _is_statement learns each type once.
_STATEMENT_BASES = (cst.BaseSmallStatement, cst.BaseCompoundStatement)
_IS_STATEMENT: dict = {}


def _is_statement(kind: type) -> bool:
    found = _IS_STATEMENT.get(kind)
    if found is None:
        found = _IS_STATEMENT[kind] = issubclass(kind, _STATEMENT_BASES)
    return found


def _params(node: cst.FunctionDef) -> Tuple[str, ...]:
    p = node.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return tuple(names)


class ModelBuilder:
    """Fills a FileModel in one walk (``record``). Dispatch is by type in ``on_visit`` for speed."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.order = 0
        self.scope: Scope = file_model.module_scope
        self.frames: list = []  # enclosing ClassDef/FunctionDef nodes
        self.loops: list = [[]]  # a loop stack per open scope
        # the lexical grad mode in each open with-block: its own, else the one it sits in
        self.grad: list = []
        self.blocks: list = []  # [block id, statement count]
        # the statement being walked: every call and assignment sits in one, so the
        # module stands here only until the first statement
        self.stmt: cst.CSTNode = file_model.module
        self.stmt_index = 0
        self.block_id = 0
        self.parents: dict = {}  # id(node) -> the node it sits in, for fixes and positions
        # ids of suites that never run (dead_code.py) and how many of them are open:
        # nothing under one is recorded, only its parents (so the engine can tell it is dead)
        self.dead_suites: set = set()
        self.dead_depth = 0
        # a yield, an await or an async for/with/comprehension anywhere, dead code included
        # (``edits.suspends`` walks a fix's target for one: a file without any needs no walk)
        self.suspends = False

    # -- helpers -------------------------------------------------------
    def _tick(self) -> int:
        self.order += 1
        return self.order

    def _site(self) -> Site:
        loops = self.loops[-1]
        mode = self.grad[-1] if self.grad else None
        return Site(self.scope, loops[-1] if loops else None, self._tick(), mode,
                    self.block_id, self.stmt_index, self.stmt)

    def _assign(self, node: cst.CSTNode, kind: str, targets: List[cst.BaseExpression],
                value: Optional[cst.BaseExpression], op: Optional[str] = None) -> None:
        assignment = Assignment(node, self._site(), kind, tuple(targets), value, op)
        self.scope.assignments.append(assignment)
        self.file_model.assignments.append(assignment)

    # -- dispatch ------------------------------------------------------
    def record(self, module: cst.Module) -> None:
        """The one walk of the tree: ``on_visit`` and ``on_leave`` around the nodes that may
        record something (``_QUIET``: the others), ``parents`` filled for all."""
        walk_parented(module, self.on_visit, self.on_leave, self.parents, _QUIET, self.dead_suites)

    def on_visit(self, node: cst.CSTNode) -> None:
        if self.dead_depth or id(node) in self.dead_suites:
            if id(node) in self.dead_suites:
                self.dead_depth += 1
            self.note_suspension(node)  # a dead yield still makes a generator
            return
        kind = type(node)
        statement = _IS_STATEMENT.get(kind)  # ``_is_statement``, its call spared at every node
        if statement is None:
            statement = _is_statement(kind)
        if statement:
            self.blocks[-1][1] += 1
            self.stmt, self.stmt_index = node, self.blocks[-1][1]
        elif kind in _BLOCKS:
            self.blocks.append([id(node), 0])
            self.block_id = id(node)
        handler = _VISIT.get(kind)
        if handler is not None:
            handler(self, node)

    def on_leave(self, node: cst.CSTNode) -> None:
        if self.dead_depth:
            if id(node) in self.dead_suites:
                self.dead_depth -= 1
            return
        if type(node) in _BLOCKS:
            self.blocks.pop()
            if self.blocks:
                self.block_id = self.blocks[-1][0]
        handler = _LEAVE.get(type(node))
        if handler is not None:
            handler(self, node)

    # -- definitions ---------------------------------------------------
    def visit_function(self, node: cst.FunctionDef) -> None:
        class_name = None
        if self.frames and isinstance(self.frames[-1], cst.ClassDef):
            class_name = self.frames[-1].name.value
        dec = None
        for d in node.decorators:
            dec = classify(d.decorator) or dec
        lexical = self.grad[-1] if self.grad else None
        scope = Scope(node, node.name.value, self.scope, class_name, _params(node), dec,
                      lexical, start=self._tick())
        self.file_model.add_scope(scope)
        self.frames.append(node)
        self.scope = scope
        self.loops.append([])

    def leave_function(self, node: cst.FunctionDef) -> None:
        self.scope.end = self._tick()
        parent = self.scope.parent
        assert parent is not None  # a function's scope has a parent
        self.scope = parent
        self.frames.pop()
        self.loops.pop()

    def visit_subscript(self, node: cst.Subscript) -> None:
        self.file_model.subscripts.append(node)

    def visit_class(self, node: cst.ClassDef) -> None:
        self.file_model.class_bases[node.name.value] = tuple(
            b for b in (dotted(a.value) for a in node.bases) if b
        )
        self.frames.append(node)

    def leave_class(self, node: cst.ClassDef) -> None:
        self.frames.pop()

    # -- control flow --------------------------------------------------
    def visit_if(self, node: cst.If) -> None:
        self.dead_suites.update(map(id, dead_suites(node)))

    def visit_loop(self, node: Union[cst.For, cst.While]) -> None:
        if isinstance(node, cst.While):
            self.dead_suites.update(map(id, dead_suites(node)))
        self.note_suspension(node)
        stack = self.loops[-1]
        loop = Loop(node, self.scope, stack[-1] if stack else None, self._tick())
        self.scope.loops.append(loop)
        stack.append(loop)
        if isinstance(node, cst.For):
            loop.iter = node.iter
            # The target is bound inside the loop, once per iteration.
            self._assign(node, "for", [node.target], node.iter)

    def leave_loop(self, node: cst.BaseCompoundStatement) -> None:
        self.loops[-1].pop().end = self._tick()

    def visit_with(self, node: cst.With) -> None:
        self.note_suspension(node)
        mode = None
        for item in node.items:
            mode = classify(item.item) or mode
            if item.asname is not None:
                self._assign(node, "with", [item.asname.name], item.item)
        self.grad.append(mode if mode is not None or not self.grad else self.grad[-1])

    def leave_with(self, node: cst.With) -> None:
        self.grad.pop()

    def note_suspension(self, node: cst.CSTNode) -> None:
        """Called at every node type that may suspend (``tree.suspends_here``), dead or not."""
        self.suspends = self.suspends or suspends_here(node)

    # -- records -------------------------------------------------------
    def visit_call(self, node: cst.Call) -> None:
        callee = method = receiver = None
        func = node.func
        if type(func) is cst.Attribute:  # not ``isinstance``: see ``expr.dotted``
            method = func.attr.value
            receiver = dotted(func.value)
            callee = None if receiver is None else f"{receiver}.{method}"  # ``dotted(func)``, its chain read once
        elif type(func) is cst.Name:
            callee = method = func.value
        call = CallSite(node, self._site(), callee, method, receiver)
        self.scope.calls.append(call)
        self.file_model.calls.append(call)
        if method == "set_grad_enabled" and isinstance(self.stmt, cst.Expr) and self.stmt.value is node:
            mode = classify_statement_call(node)
            if mode is not None:
                self.scope.grad_switches.append((call.order, mode))

    def visit_assign(self, node: cst.Assign) -> None:
        self._assign(node, "assign", [t.target for t in node.targets], node.value)

    def visit_ann_assign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node, "assign", [node.target], node.value)

    def visit_aug_assign(self, node: cst.AugAssign) -> None:
        op = type(node.operator).__name__  # AddAssign, SubtractAssign, ...
        self._assign(node, "aug", [node.target], node.value, op)

    def visit_del(self, node: cst.Del) -> None:
        self._assign(node, "del", [node.target], None)

    def visit_return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.scope.returns.append((self._site(), node.value))

    def visit_global(self, node: cst.Global) -> None:
        self.scope.global_names.update(item.name.value for item in node.names)

    def visit_import(self, node: cst.Import) -> None:
        self.file_model.names.add_import(node)

    def visit_import_from(self, node: cst.ImportFrom) -> None:
        self.file_model.names.add_import_from(node)


_VISIT: Dict[type, Callable[[ModelBuilder, Any], None]] = {
    cst.FunctionDef: ModelBuilder.visit_function,
    cst.ClassDef: ModelBuilder.visit_class,
    cst.If: ModelBuilder.visit_if,
    cst.For: ModelBuilder.visit_loop,
    cst.While: ModelBuilder.visit_loop,
    cst.With: ModelBuilder.visit_with,
    cst.Call: ModelBuilder.visit_call,
    cst.Assign: ModelBuilder.visit_assign,
    cst.AnnAssign: ModelBuilder.visit_ann_assign,
    cst.AugAssign: ModelBuilder.visit_aug_assign,
    cst.Del: ModelBuilder.visit_del,
    cst.Return: ModelBuilder.visit_return,
    cst.Global: ModelBuilder.visit_global,
    cst.Import: ModelBuilder.visit_import,
    cst.ImportFrom: ModelBuilder.visit_import_from,
    cst.Subscript: ModelBuilder.visit_subscript,
    cst.Yield: ModelBuilder.note_suspension,
    cst.Await: ModelBuilder.note_suspension,
    cst.CompFor: ModelBuilder.note_suspension,
}
_LEAVE: Dict[type, Callable[[ModelBuilder, Any], None]] = {
    cst.FunctionDef: ModelBuilder.leave_function,
    cst.ClassDef: ModelBuilder.leave_class,
    cst.For: ModelBuilder.leave_loop,
    cst.While: ModelBuilder.leave_loop,
    cst.With: ModelBuilder.leave_with,
}

# Node types at which the builder records nothing: not a statement, a block or a type
# with a handler. A suite that never runs (``dead_code``) is entered whatever its type.
_QUIET = frozenset(
    kind for kind in vars(cst).values()
    if isinstance(kind, type) and issubclass(kind, cst.CSTNode) and not _is_statement(kind)
    and kind not in _BLOCKS and kind not in _VISIT and kind not in _LEAVE
)
