"""What a name was built as: the construction call behind a criterion, a model or an optimizer.

``criterion(out, y)`` computes a cross-entropy only if ``criterion`` was built by
``nn.CrossEntropyLoss()``; ``model(x)`` ends in a softmax only if ``model`` is a
``Net()`` whose ``forward`` does; a step is k times too large only for an optimizer
that does not divide by the gradient's size. The construction may stand in the
same function, at module level (a script, a notebook), in a method of the class
(``self.criterion = nn.CrossEntropyLoss()`` in ``__init__``), or at every caller
of a function that takes the object as a parameter. Moves and wrappers hand back
what they were given (``Net().to(device)``, ``DataParallel(model)``,
``torch.compile(model)``).

The answer is every construction that may reach the read: a binding that every
path to the read runs, and the conditional ones after it (``if args.big:
model = Big()``). None where one of them is not a visible construction (a
function's result, a loop variable, a name nobody binds here): what the caller
asks of the constructions (one loss class, one output activation) must hold of
all of them, and an unknown one could be anything.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from torchlint.model.expr import dotted, positional
from torchlint.model.leaves import argument_at_calls
from torchlint.model.roles import _MOVES, _WRAPPERS  # one list of what hands back the model it is given

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Assignment, Scope

_MAX_DEPTH = 8
# Statements whose body may not run (or may run again) on a path to what follows them.
_BRANCHES = (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler,
             cst.ExceptStarHandler, cst.Finally, cst.Match, cst.MatchCase)


@dataclass(frozen=True)
class Built:
    """One construction: the call that built the object and the scope it stands in."""

    call: cst.Call
    scope: Scope
    order: int


@dataclass(frozen=True)
class Binding:
    """A binding of a name that may reach a read: its assignment, the value it binds, and
    for ``a, b = f()`` the position of the name in the unpacked tuple (None otherwise)."""

    assignment: Assignment
    value: Optional[cst.BaseExpression]
    index: Optional[int]


def constructions(file_model: FileModel, scope: Scope, path: str, order: int,
                  _depth: int = 0) -> Optional[Tuple[Built, ...]]:
    """The constructions ``path`` may hold when read at ``order`` in ``scope``."""
    if _depth > _MAX_DEPTH:
        return None
    if path.startswith(("self.", "cls.")):
        return _attribute_constructions(file_model, scope, path, _depth)
    bindings = reaching_bindings(file_model, scope, path, order)
    if bindings:
        return _all_of([_built_by(file_model, scope, b, _depth) for b in bindings])
    root = path.split(".", 1)[0]
    if root in scope.params:
        if root != path or scope.is_module:
            return None
        passed = argument_at_calls(file_model, scope, root)
        if not passed:
            return None
        return _all_of([None if value is None else
                        built_from(file_model, call.scope, value, call.order, _depth + 1) for call, value in passed])
    outer = scope.parent
    while outer is not None:  # a closure's or a module-level name, bound before the function runs
        bound = [_built_by(file_model, outer, b, _depth) for b in _every_binding(file_model, outer, path)]
        if bound:
            return _all_of(bound)
        outer = outer.parent
    return None


def built_from(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, order: int,
               _depth: int = 0) -> Optional[Tuple[Built, ...]]:
    """The constructions an expression evaluates to: ``nn.CrossEntropyLoss()`` itself,
    ``Net().to(device)``, ``DataParallel(model)``, or a name bound to one."""
    if _depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        func = expr.func
        last = (dotted(func) or "").rsplit(".", 1)[-1]
        if isinstance(func, cst.Attribute) and func.attr.value in _MOVES:
            return built_from(file_model, scope, func.value, order, _depth + 1)
        if last in _WRAPPERS:
            wrapped = positional(expr, 0)
            return None if wrapped is None else built_from(file_model, scope, wrapped, order, _depth + 1)
        return (Built(expr, scope, order),)
    path = dotted(expr)
    if path is None or path in ("self", "cls"):
        return None
    return constructions(file_model, scope, path, order, _depth + 1)


def reaching_bindings(file_model: FileModel, scope: Scope, path: str, order: int) -> List[Binding]:
    """The bindings of ``path`` in ``scope`` before ``order`` that may reach a read there: the last
    one every path to the read runs, and every conditional one after it. Empty when ``scope``
    binds ``path`` nowhere before ``order``."""
    read = _statement_at(file_model, scope, order)
    read_blocks = _ancestor_ids(file_model, read, scope) if read is not None else frozenset()
    live: List[Binding] = []
    for a in _assignments_naming(file_model, scope, path):
        if a.order >= order:
            break
        if a.site.stmt is read:
            continue  # ``x = f(x)``: the read comes before the statement binds
        for binding in _bindings_of(a, path):
            if read is not None and _always_runs_before(file_model, a, read_blocks, scope):
                live = [binding]
            else:
                live.append(binding)
    return live


def _every_binding(file_model: FileModel, scope: Scope, path: str) -> List[Binding]:
    return [b for a in _assignments_naming(file_model, scope, path) for b in _bindings_of(a, path)]


def _assignments_naming(file_model: FileModel, scope: Scope, path: str) -> Sequence[Assignment]:
    """The assignments of ``scope``, in order, whose targets name ``path`` (``_bindings_of`` finds
    its bindings in no others): asked for name after name, a scan of every assignment each time
    was most of what the loss rules' constructions cost in a long notebook."""
    return file_model.derived(_assignments_by_name, scope).get(path, ())


def _assignments_by_name(file_model: FileModel, scope: Scope) -> Dict[str, List[Assignment]]:
    by_name: Dict[str, List[Assignment]] = {}
    for a in scope.assignments:
        # ``_names_in`` gives a plain target's own path too: every name ``_bindings_of`` may match
        for path in {p for target in a.targets for p in _names_in(target)}:
            by_name.setdefault(path, []).append(a)
    return by_name


def _bindings_of(a: Assignment, path: str) -> Iterator[Binding]:
    for target in a.targets:
        if a.kind in ("assign", "with"):
            yield from _unpack(a, target, a.value, path, None)
        elif dotted(target) == path or (a.kind == "for" and path in _names_in(target)):
            yield Binding(a, None, None)  # ``+=``, ``del``, a loop variable: no construction to read


def _unpack(a: Assignment, target: cst.BaseExpression, value: Optional[cst.BaseExpression], path: str,
            index: Optional[int]) -> Iterator[Binding]:
    if dotted(target) == path:
        yield Binding(a, value, index)
        return
    if not isinstance(target, (cst.Tuple, cst.List)):
        return
    pairs = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
    starred = any(isinstance(el, cst.StarredElement) for el in target.elements)
    for i, el in enumerate(target.elements):
        if path not in _names_in(el.value):
            continue
        if starred or isinstance(el, cst.StarredElement) or index is not None:
            yield Binding(a, None, None)  # ``a, *rest = ...`` or nested unpacking: positions are lost
        elif pairs is not None and len(pairs) == len(target.elements):
            yield from _unpack(a, el.value, pairs[i].value, path, None)
        else:
            yield from _unpack(a, el.value, value, path, i)


def _names_in(target: cst.BaseExpression) -> Set[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return {p for el in target.elements for p in _names_in(el.value)}
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    path = dotted(target)
    return {path} if path is not None else set()


def _built_by(file_model: FileModel, scope: Scope, binding: Binding, depth: int) -> Optional[Tuple[Built, ...]]:
    if binding.value is None or binding.index is not None:
        return None
    return built_from(file_model, scope, binding.value, binding.assignment.order, depth + 1)


def _attribute_constructions(file_model: FileModel, scope: Scope, path: str,
                             depth: int) -> Optional[Tuple[Built, ...]]:
    """``self.criterion``: whatever the methods of the class (and its bases in this file)
    assign to it, wherever they do."""
    cls = file_model.enclosing_class(scope)
    if cls is None:
        return None
    classes = class_and_bases(file_model, cls)
    found: List[Optional[Tuple[Built, ...]]] = []
    for method in file_model.scopes:
        if method.class_name in classes:
            found += [_built_by(file_model, method, b, depth) for b in _every_binding(file_model, method, path)]
    return _all_of(found) if found else None


def class_and_bases(file_model: FileModel, cls: str) -> Tuple[str, ...]:
    """``cls`` and the classes of this file it derives from, nearest first."""
    out: List[str] = []
    todo = [cls]
    while todo:
        current = todo.pop(0)
        if current in out or current not in file_model.class_bases:
            continue
        out.append(current)
        todo.extend(file_model.class_bases[current])
    return tuple(out)


def _all_of(found: List[Optional[Tuple[Built, ...]]]) -> Optional[Tuple[Built, ...]]:
    if not found or any(f is None for f in found):
        return None
    return tuple(b for f in found if f is not None for b in f)


# -- where a statement stands -------------------------------------------------------
def _statement_at(file_model: FileModel, scope: Scope, order: int) -> Optional[cst.CSTNode]:
    """The statement of ``scope`` whose record (a call, an assignment or a return) has ``order``."""
    for call in scope.calls:
        if call.order == order:
            return call.site.stmt
    for a in scope.assignments:
        if a.order == order:
            return a.site.stmt
    for site, _ in scope.returns:
        if site.order == order:
            return site.stmt
    return None


def _ancestor_ids(file_model: FileModel, node: cst.CSTNode, scope: Scope) -> frozenset:
    out = set()
    current: Optional[cst.CSTNode] = node
    while current is not None and current is not scope.node:
        out.add(id(current))
        current = file_model.parents.get(id(current))
    return frozenset(out)


def _always_runs_before(file_model: FileModel, a: Assignment, read_blocks: frozenset, scope: Scope) -> bool:
    """Does every path to the read run the assignment ``a`` (which comes before it)? Yes when
    the statements around ``a``, up to the first one that also holds the read, are no branch,
    loop or ``try``: ``with`` blocks and plain blocks always run."""
    current: Optional[cst.CSTNode] = file_model.parents.get(id(a.site.stmt))
    while current is not None and current is not scope.node and id(current) not in read_blocks:
        if isinstance(current, _BRANCHES):
            return False
        current = file_model.parents.get(id(current))
    return True


def torch_class(file_model: FileModel, built: Built) -> Optional[str]:
    """``torch.nn.CrossEntropyLoss`` for ``nn.CrossEntropyLoss(...)``; None for anything not torch's."""
    return file_model.names.qualify(dotted(built.call.func))


def one_torch_class(file_model: FileModel, found: Optional[Tuple[Built, ...]]) -> Optional[str]:
    """The torch class every construction in ``found`` builds, when they agree."""
    classes = {torch_class(file_model, b) for b in found or ()}
    return classes.pop() if len(classes) == 1 else None

