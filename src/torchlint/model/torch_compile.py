"""``torch.compile`` calls: which ones throw their result away, which ones run again and again.

``torch.compile(model)`` changes nothing in place: it hands back a compiled wrapper
(``nn.Module.compile()`` is the in-place spelling). So a call whose value is a bare
statement compiles nothing. A call that runs once per iteration of a loop, or once per
forward pass, wraps the same callable again every time; that is only what the author
meant when something it compiles changes between runs (the loop's own variables, a
``torch._dynamo.reset()`` that times a fresh compilation), or when a condition lets it
run once (``if compiled is None:``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set

import libcst as cst

from torchlint.model import vocab
from torchlint.model.distributed import scope_repeats
from torchlint.model.expr import bound_paths, dotted, keyword, positional, referenced_paths
from torchlint.model.tree import COMPREHENSIONS

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Loop, Scope

# What clears dynamo's cache of compiled code: a loop that calls it compiles afresh on purpose.
_RESETS = frozenset(("torch._dynamo.reset", "torch.compiler.reset"))


def compile_calls(file_model: FileModel) -> List[CallSite]:
    """``torch.compile(target, ...)`` calls that name what they compile (not the decorator
    factory ``torch.compile(mode=...)``)."""
    return file_model.derived(_compile_calls)


def _compile_calls(file_model: FileModel) -> List[CallSite]:
    return [call for call in file_model.calls
            if file_model.qualify(call) == "torch.compile" and compiled_target(call) is not None]


def compiled_target(call: CallSite) -> Optional[cst.BaseExpression]:
    """What a ``torch.compile`` call compiles: its first argument, or ``model=``."""
    return positional(call.node, 0) or keyword(call.node, "model")


def result_discarded(call: CallSite) -> bool:
    """Is the call a statement of its own, its value used by nothing?"""
    stmt = call.site.stmt
    return isinstance(stmt, cst.Expr) and stmt.value is call.node


def _enclosing(file_model: FileModel, call: CallSite, stop: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes around ``call.node``, innermost first, up to (not including) ``stop``."""
    node: Optional[cst.CSTNode] = call.node
    while node is not None:
        node = file_model.parents.get(id(node))
        if node is None or node is stop:
            return
        yield node


def _conditional(file_model: FileModel, call: CallSite, stop: cst.CSTNode) -> bool:
    """Does an ``if`` (or a comprehension) between ``stop`` and the call decide whether
    or how often it runs?"""
    return any(isinstance(node, (cst.If, cst.IfExp, *COMPREHENSIONS)) for node in _enclosing(file_model, call, stop))


def _reads(call: CallSite) -> Set[str]:
    """Every dotted name the call's arguments read."""
    return {path for arg in call.node.args for path in referenced_paths(arg.value)}


def _depends(reads: Set[str], bound: Set[str]) -> bool:
    return any(r == b or r.startswith(b + ".") or b.startswith(r + ".") for r in reads for b in bound)


def _own_assignment(call: CallSite, value: Optional[cst.BaseExpression]) -> bool:
    return value is call.node


def repeated_compile(file_model: FileModel, call: CallSite) -> Optional[str]:
    """How a ``torch.compile`` call runs again on the same callable: ``"loop"`` (every
    iteration of the loop around it), ``"forward"`` (every forward pass of the module whose
    ``forward`` makes it) or ``"caller"`` (every call of a function that a loop of this file
    calls). None when it runs once, or compiles something different each time."""
    loop = call.site.loop
    if loop is not None:
        return "loop" if _same_every_iteration(file_model, call, loop) else None
    scope = call.scope
    if scope.is_module or _conditional(file_model, call, scope.node):
        return None
    if _depends(_reads(call), _locals(scope, call)):
        return None
    cls = file_model.enclosing_class(scope)
    if scope.name in vocab.FORWARD_METHODS and file_model.is_module_class(cls):
        return "forward"
    return "caller" if scope_repeats(file_model, scope) else None


def _same_every_iteration(file_model: FileModel, call: CallSite, loop: Loop) -> bool:
    if _conditional(file_model, call, loop.node):
        return False
    if any(file_model.qualify(c) in _RESETS for c in file_model.calls_in(loop)):
        return False
    bound: Set[str] = set()
    for a in file_model.assignments:
        if loop.start <= a.order < loop.end and a.site.scope is loop.scope and not _own_assignment(call, a.value):
            bound.update(p for t in a.targets for p in bound_paths(t))
    return not _depends(_reads(call), bound)


def _locals(scope: Scope, call: CallSite) -> Set[str]:
    """The function's parameters and the names it binds (but its object's attributes, ``self.x``,
    only where it binds them), less what the compile call's own assignment binds."""
    names = {p for p in scope.params if p not in ("self", "cls")}
    for a in scope.assignments:
        if not _own_assignment(call, a.value):
            names.update(p for t in a.targets for p in bound_paths(t))
    return names


def rebinds_its_target(call: CallSite) -> bool:
    """``model = torch.compile(model)``: the call's value replaces the name it compiles."""
    stmt = call.site.stmt
    target = dotted(compiled_target(call))
    if target is None or not isinstance(stmt, cst.Assign) or stmt.value is not call.node:
        return False
    return any(dotted(t.target) == target for t in stmt.targets)
