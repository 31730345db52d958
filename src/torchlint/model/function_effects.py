"""What a function does to the values it is handed, told from the model of its own module.

One definition for every call site: a call of a function of this file asks its scope here,
and a call of a function of another module of the project asks the same question of that
module's model (``ProjectFunction.ask``), which a lint of that module builds the same way.
The project index's ``ast`` summary only says which functions could have each effect
(``FunctionSummary.may_write_in_place``, ``may_rewalk``): a module is parsed with libcst
only when a call may need its answer.

Each fact is ``fact(file_model, scope)`` and is asked through ``file_model.derived`` (memoised
per model, as every derived analysis is).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple

import libcst as cst

from torchlint.model.expr import bound_paths, dotted
from torchlint.model.grad import GradMode
from torchlint.model.vocab import GRADIENT_CLIPS, last_name, writes_in_place as is_in_place_method
from torchlint.model.walk import children

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Scope

# Calls that read an iterable to its end (``any``/``all`` may stop early).
_EXHAUSTING_CALLS = frozenset("list tuple set sorted sum min max".split())
_GRAD_PATHS = (".grad", ".grad.data")
_NESTED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def positional_and_keyword_params(scope: Scope) -> Tuple[Tuple[str, ...], frozenset]:
    """The positional parameters in order, and every name a call can bind (keyword-only too);
    ``*args`` and ``**kwargs`` hold no one value a call hands over."""
    node = scope.node
    if not isinstance(node, cst.FunctionDef):
        return (), frozenset()
    params = node.params
    positional = tuple(p.name.value for p in (*params.posonly_params, *params.params))
    return positional, frozenset(positional) | {p.name.value for p in params.kwonly_params}


# -- parameters written in place ---------------------------------------------------
def written_in_place(file_model: FileModel, scope: Scope) -> frozenset:
    """The parameters ``scope`` writes in place with grad on (``t.add_(1)``, ``t -= g``,
    ``t[0] = 0``) and never binds to anything else: handed a leaf that requires grad, a call
    of it raises."""
    _, names = positional_and_keyword_params(scope)
    if not names:
        return frozenset()
    written = set()
    for target, grad in _in_place_targets(scope):
        while isinstance(target, cst.Subscript):
            target = target.value
        if isinstance(target, cst.Name) and target.value in names and grad is not GradMode.NO_GRAD:
            written.add(target.value)
    return frozenset(written - names_bound_in(scope))


def _in_place_targets(scope: Scope) -> Iterator[Tuple[cst.BaseExpression, Optional[GradMode]]]:
    """What each in-place write of the scope changes, with the grad mode written around it (the
    innermost ``with``, else the function's decorator)."""
    for call in scope.calls:
        func = call.node.func
        if isinstance(func, cst.Attribute) and is_in_place_method(func.attr.value):
            yield func.value, call.site.grad or scope.decorator_grad
    for a in scope.assignments:
        if a.kind == "aug" or (a.kind == "assign" and any(isinstance(t, cst.Subscript) for t in a.targets)):
            yield a.targets[0], a.site.grad or scope.decorator_grad


def names_bound_in(scope: Scope) -> Set[str]:
    """Every name the function's own code binds (assignment, loop, ``with``, ``del``, walrus,
    comprehension, ``except ... as``, ``import``, a nested ``def``/``class``, ``global`` and
    ``nonlocal``): an augmented assignment writes in place and binds nothing new."""
    found = set(scope.global_names)
    for a in scope.assignments:
        if a.kind != "aug":
            found.update(name for t in a.targets for name in bound_paths(t) if "." not in name)
    body = scope.node.body if isinstance(scope.node, cst.FunctionDef) else None
    for node in _own_nodes(body) if body is not None else ():
        found.update(_names_bound_by(node))
    return found


def _names_bound_by(node: cst.CSTNode) -> Iterator[str]:
    kind = type(node)
    if kind in (cst.CompFor, cst.NamedExpr):
        yield from (n for n in bound_paths(node.target) if "." not in n)  # type: ignore[attr-defined]
    elif kind is cst.ExceptHandler and node.name is not None:  # type: ignore[attr-defined]
        yield from (n for n in bound_paths(node.name.name) if "." not in n)  # type: ignore[attr-defined]
    elif kind is cst.Nonlocal:
        yield from (item.name.value for item in node.names)  # type: ignore[attr-defined]
    elif kind in (cst.Import, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):  # type: ignore[attr-defined]
        for alias in node.names:  # type: ignore[attr-defined]
            yield dotted(alias.asname.name if alias.asname else alias.name).split(".")[0]  # type: ignore[union-attr]
    elif kind in (cst.FunctionDef, cst.ClassDef):
        yield node.name.value  # type: ignore[attr-defined]


def _own_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node under it that belongs to the same function: a nested ``def``,
    ``class`` or ``lambda`` is yielded, not entered."""
    todo: List[cst.CSTNode] = [node]
    while todo:
        current = todo.pop()
        yield current
        if not isinstance(current, _NESTED):
            todo.extend(reversed(children(current)))


# -- parameters walked twice ---------------------------------------------------------
def rewalked(file_model: FileModel, scope: Scope) -> frozenset:
    """The parameters the function walks to the end in a statement of its own body that always
    runs (a loop without ``break``, a comprehension, ``sum``/``list`` of it, a clip), and
    walks again after that to change gradients: a loop over it that writes ``.grad`` in place,
    or a clip of it. Handed a generator, the second walk sees nothing. A parameter the
    function binds again (``parameters = list(parameters)``) is left out."""
    params, _ = positional_and_keyword_params(scope)
    if not params or not any(_clip_of_any(c.node) or _writes_grad(c.node) for c in scope.calls) and not any(
            _writes_grad(a.node) for a in scope.assignments):
        return frozenset()  # nothing changes gradients: most functions
    statements = _body_statements(scope)
    rebound = names_bound_in(scope)
    out = set()
    for param in params:
        if param in rebound:
            continue
        first = next((i for i, statement in enumerate(statements) if _exhausts(statement, param)), None)
        if first is not None and any(_changes_gradients_of(s, param) for s in statements[first + 1:]):
            out.add(param)
    return frozenset(out)


def _body_statements(scope: Scope) -> List[cst.CSTNode]:
    """The function's own statements in order, each small statement of a ``a; b`` line apart."""
    return _statements(scope.node.body) if isinstance(scope.node, cst.FunctionDef) else []


def _statements(suite: cst.BaseSuite) -> List[cst.CSTNode]:
    """A block's statements in order, each small statement of an ``a; b`` line apart."""
    lines = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
    out: List[cst.CSTNode] = []
    for line in lines:
        out.extend(line.body if isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else [line])
    return out


def _is_name(node: Optional[cst.CSTNode], name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _clip_of_any(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and last_name(dotted(node.func) or "") in GRADIENT_CLIPS


def _clip_of(node: cst.CSTNode, name: str) -> bool:
    if not isinstance(node, cst.Call) or not _clip_of_any(node):
        return False
    positional = [a for a in node.args if a.keyword is None and not a.star]
    given = positional[0].value if positional else next(
        (a.value for a in node.args if a.keyword is not None and a.keyword.value == "parameters"), None)
    return _is_name(given, name)


def _exhausts(statement: cst.CSTNode, name: str) -> bool:
    """Does the statement, whenever it runs, walk ``name`` to its end? A loop over it with no
    ``break``, a ``with`` block one of whose statements does, a simple statement with a
    comprehension over it or ``sum``/``list`` of it; not a statement of an ``if`` or a loop
    over something else, which may not run."""
    if isinstance(statement, cst.For) and _is_name(statement.iter, name):
        return not any(isinstance(n, cst.Break) for s in _statements(statement.body) for n in _own_nodes(s))
    if isinstance(statement, cst.With):
        return any(_exhausts(inner, name) for inner in _statements(statement.body))
    if not isinstance(statement, (cst.Expr, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return)):
        return False
    for node in _own_nodes(statement):
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)) \
                and _is_name(node.for_in.iter, name):
            return True
        if isinstance(node, cst.Call) and (_clip_of(node, name) or (
                isinstance(node.func, cst.Name) and node.func.value in _EXHAUSTING_CALLS
                and any(_is_name(a.value, name) for a in node.args))):
            return True
    return False


def _changes_gradients_of(statement: cst.CSTNode, name: str) -> bool:
    for node in _own_nodes(statement):
        if _clip_of(node, name):
            return True
        if isinstance(node, cst.For) and _is_name(node.iter, name) \
                and any(_writes_grad(n) for s in _statements(node.body) for n in _own_nodes(s)):
            return True
    return False


def _writes_grad(node: cst.CSTNode) -> bool:
    """``p.grad.mul_(c)``, ``p.grad.data.clamp_(-v, v)``, ``p.grad = ...``, ``p.grad.data *= c``."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        method = node.func.attr.value
        return method.endswith("_") and not method.startswith("_") and (
            dotted(node.func.value) or "").endswith(_GRAD_PATHS)
    if isinstance(node, cst.Assign):
        return any((dotted(t.target) or "").endswith(_GRAD_PATHS) for t in node.targets)
    if isinstance(node, cst.AugAssign):
        return (dotted(node.target) or "").endswith(_GRAD_PATHS)
    return False
