"""Graph taint: which names hold tensors that carry an autograd graph.

Sources are forward passes, loss computations and same-module functions
that return such tensors, outside no_grad. Arithmetic, indexing and most
tensor methods keep the graph; ``.item()``, ``.detach()``, ``.tolist()``,
``.numpy()``, ``float()``, comparisons and integer results end it. Unknown
functions are assumed to end it: a missed leak costs less than a false alarm.
"""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, keyword, literal_bool, positional
from torchlint.model.grad import GradMode
from torchlint.model.project_calls import returned_graph
from torchlint.model.records import CallSite
from torchlint.model.vocab import (
    CONTAINER_METHODS, GRAPH_FREE_FACTORIES, KILL_ATTRS, KILL_BUILTINS, KILL_METHODS, KILL_TORCH, PROPAGATE_BUILTINS,
    SHAPE_METHODS, last_name, tokens,
)

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Scope, Site
    from torchlint.model import FileModel

# Draws from a distribution (``Categorical(p).sample()``): integers or values with no graph.
DRAW_METHODS = frozenset(("sample",))
# Reductions that return a (values, indices) pair: always, or only when given a dim.
PAIR_ALWAYS = frozenset("sort topk kthvalue mode cummax cummin".split())
PAIR_WITH_DIM = frozenset("max min median nanmedian".split())
# Python values of a tensor: what ``.item()``, ``.tolist()``, ``float()`` hand back.
_ADDITIVE = frozenset(("AddAssign", "SubtractAssign", "MultiplyAssign", "DivideAssign"))


class Taint:
    """Replays a scope's assignments in order, keeping the graph-carrying names."""

    def __init__(self, file_model: FileModel, scope: Scope) -> None:
        self.file_model = file_model
        self.scope = scope
        self._orders: list = [0]
        self._states: list = [frozenset()]
        self._starts: Optional[dict] = None
        self._replay()

    def names_at(self, order: int) -> frozenset:
        return self._states[bisect.bisect_left(self._orders, order) - 1]

    def carries_graph(self, expr: Optional[cst.BaseExpression], order: int) -> bool:
        return expr is not None and self._tainted(expr, self.names_at(order))

    def carries_graph_in_statement(self, expr: Optional[cst.BaseExpression], site: Site) -> bool:
        """``carries_graph`` with the names every earlier statement bound, the one right before
        included. ``names_at(order)`` leaves out a binding in effect from ``order`` itself: an
        assignment without calls (``loss = a + b``) is in effect from the very order of the next
        statement (``self.total += loss``). (The other callers keep ``carries_graph``: reading
        their questions this way may change their findings, to be weighed on its own.)"""
        if expr is None:
            return False
        start = self._statement_starts().get(id(site.stmt), site.order)
        # In effect at ``start``: set by an event before the statement, none of its own.
        return self._tainted(expr, self._states[bisect.bisect_right(self._orders, start) - 1])

    def _statement_starts(self) -> dict:
        """{id of a statement: the first order of the calls and assignments it holds}."""
        if self._starts is None:
            self._starts = {}
            for site in [c.site for c in self.scope.calls] + [a.site for a in self.scope.assignments]:
                key = id(site.stmt)
                self._starts[key] = min(self._starts.get(key, site.order), site.order)
        return self._starts

    # -- replay --------------------------------------------------------
    def _replay(self) -> None:
        events: List[Union[Assignment, CallSite]] = list(self.scope.assignments)
        events += [c for c in self.scope.calls if c.method in CONTAINER_METHODS and c.receiver]
        events.sort(key=lambda e: e.order)
        current: Set[str] = set()
        for event in events:
            before = frozenset(current)
            if not isinstance(event, CallSite):
                self._apply_assignment(event, before, current)
            elif event.receiver and any(self._tainted(arg.value, before) for arg in event.node.args):  # (it has one)
                current.add(event.receiver)
            if current != before:
                self._orders.append(event.order + 1)  # effective after the event
                self._states.append(frozenset(current))

    def _apply_assignment(self, a: Assignment, before: frozenset, current: set) -> None:
        if a.kind == "del":
            for t in a.targets:
                path = dotted(t)
                current.discard(path)
            return
        if a.kind == "aug":
            path = dotted(a.targets[0])
            if path and a.op in _ADDITIVE and (path in before or self._tainted(a.value, before)):
                current.add(path)
            return
        parts = self.element_taint(a.value, before)
        tainted = any(parts) if isinstance(parts, tuple) else parts
        for target in a.targets:
            if isinstance(parts, tuple) and isinstance(target, (cst.Tuple, cst.List)) and len(
                target.elements
            ) == len(parts):
                for el, part in zip(target.elements, parts):
                    self._bind(el.value, part, current)  # loss_float, surrogate = f(...)
            else:
                self._bind(target, tainted, current)

    def element_taint(self, expr: Optional[cst.BaseExpression], names: frozenset) -> Union[bool, Tuple[bool, ...]]:
        """Per-element taint of a tuple value (a literal, or a same-module call returning one)."""
        if isinstance(expr, cst.Tuple):
            return tuple(self._tainted(el.value, names) for el in expr.elements)
        if isinstance(expr, cst.Call):
            if values_indices_pair(self.file_model, expr):
                return (self._tainted(expr, names), False)  # vals, idx = out.max(1)
            call = self.file_model.call_of(expr)
            target = self.file_model.resolve(call) if call is not None else None
            if call is not None and target is not None and target is not self.scope:
                if self.file_model.grad_at(call.site) is GradMode.NO_GRAD:
                    return False
                return self.file_model.returns_graph(target)
            if target is None and call is not None and self.file_model.grad_at(call.site) is not GradMode.NO_GRAD:
                imported = returned_graph(self.file_model, call)  # ``loss, acc = step(...)`` of another module
                if isinstance(imported, tuple):
                    return imported
        return self._tainted(expr, names)

    def _bind(self, target: cst.BaseExpression, tainted: bool, current: set) -> None:
        # ``type() is``, as ``expr.dotted`` tests: most targets are names
        if type(target) is cst.Tuple or type(target) is cst.List:
            for el in target.elements:
                self._bind(el.value, tainted, current)
            return
        if type(target) is cst.StarredElement:
            self._bind(target.value, tainted, current)
            return
        if type(target) is cst.Subscript:
            path = dotted(target.value)  # d[k] = loss: d now holds a graph
            if path and tainted:
                current.add(path)
            return
        path = dotted(target)
        if path is None:
            return
        if tainted:
            current.add(path)
        else:
            current.discard(path)

    # -- expressions ---------------------------------------------------
    def _tainted(self, expr: Optional[cst.BaseExpression], names: frozenset) -> bool:
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t is cst.Name:
            return e.value in names
        if t is cst.Attribute:
            if e.attr.value in KILL_ATTRS:
                return False
            path = dotted(e)
            if path is not None and path in names:
                return True
            return self._tainted(e.value, names)
        if t is cst.Call:
            return self._call_tainted(e, names)
        if t is cst.Subscript:
            if _indices_of_pair(self.file_model, e):
                return False  # torch.max(out, 1)[1]: the argmax positions
            return self._tainted(e.value, names)
        if t is cst.BinaryOperation:
            return self._tainted(e.left, names) or self._tainted(e.right, names)
        if t is cst.UnaryOperation:
            return not isinstance(e.operator, cst.Not) and self._tainted(e.expression, names)
        if t is cst.BooleanOperation:
            return self._tainted(e.left, names) or self._tainted(e.right, names)
        if t is cst.IfExp:
            return self._tainted(e.body, names) or self._tainted(e.orelse, names)
        if t in (cst.Tuple, cst.List, cst.Set):
            return any(self._tainted(el.value, names) for el in e.elements)
        if t is cst.Dict:
            return any(
                isinstance(el, cst.DictElement) and self._tainted(el.value, names) for el in e.elements
            )
        if t in (cst.ListComp, cst.GeneratorExp, cst.SetComp):
            if self._tainted(e.for_in.iter, names):  # [x.detach() for x in outs] is clean
                names = names | set(bound_paths(e.for_in.target))
            return self._tainted(e.elt, names)
        if t is cst.Await:
            return self._tainted(e.expression, names)
        return False  # literals, comparisons, f-strings, lambdas

    def _call_tainted(self, expr: cst.Call, names: frozenset) -> bool:
        func = expr.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in KILL_METHODS:
                return False
            if func.attr.value in DRAW_METHODS and self._draws(expr):
                return False
            if self._tainted(func.value, names) and func.attr.value not in CONTAINER_METHODS:
                return True
        call = self.file_model.call_of(expr)
        if call is None or self.file_model.grad_at(call.site) is GradMode.NO_GRAD:
            return False
        file_model = self.file_model
        methods = file_model.instance_methods(call)
        if methods and self.scope not in methods:
            # ``agent.act(s)`` of a class in this file: what the method returns, not what
            # ``agent`` is (a model's ``act`` that returns ``q.argmax()`` hands back an index).
            shapes = [file_model.returns_graph(method) for method in methods]
            return any(any(shape) if isinstance(shape, tuple) else shape for shape in shapes)
        helper = file_model.resolve(call)
        if helper is not None and helper is not self.scope and file_model.returns_plain(helper):
            return False  # a helper named like a loss that returns loss.item()
        if helper is None:
            imported = returned_graph(file_model, call)  # a function of the project's other modules
            if imported is not None:
                return any(imported) if isinstance(imported, tuple) else imported
        if file_model.is_gradient_call(call):
            return _creates_graph(expr) and any(self._tainted(arg.value, names) for arg in expr.args)
        if file_model.is_forward(call) or file_model.is_submodule_forward(call):
            return True
        if file_model.is_loss_call(call):
            # ``F.mse_loss(rewards, baseline)`` of tensors made from data: no graph to carry
            return not all(self._graph_free(arg.value, names, set()) for arg in expr.args)
        args_tainted = any(self._tainted(arg.value, names) for arg in expr.args)
        qualified = self.file_model.qualify(call)
        if qualified is not None:
            return args_tainted and qualified.rsplit(".", 1)[-1] not in KILL_TORCH
        if call.callee in KILL_BUILTINS:
            return False
        if call.callee in PROPAGATE_BUILTINS:
            return args_tainted
        target = self.file_model.resolve(call)
        if target is None or target is self.scope:
            return False
        shape = self.file_model.returns_graph(target)
        return any(shape) if isinstance(shape, tuple) else shape

    def _draws(self, expr: cst.Call) -> bool:
        """``dist.sample()``, ``Categorical(p).sample()``: a draw from a distribution, which
        never requires grad (``rsample`` is the one that does). Not ``vae.sample(z)`` nor
        ``G.sample(n)``, forwards of a model, nor a method of a class of this file."""
        call = self.file_model.call_of(expr)
        if call is None:
            return False
        file_model = self.file_model
        return not (file_model.is_forward(call) or file_model.is_submodule_forward(call)
                    or bool(file_model.instance_methods(call)))

    def _graph_free(self, expr: Optional[cst.BaseExpression], names: frozenset, seen: set) -> bool:
        """Surely no graph: numbers, tensors a factory makes (``torch.zeros(n)``, not given
        ``requires_grad``), what ``.item()``/``.detach()`` hand back, arithmetic and reshapes
        of those, and local names every binding of which is one of them. Unknown values are
        not: ``_tainted`` assumes they end the graph, this asks the opposite question."""
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t in (cst.Integer, cst.Float):
            return True
        if t is cst.Name:
            return self._graph_free_local(e.value, names, seen)
        if t is cst.Attribute:
            return e.attr.value in KILL_ATTRS
        if t is cst.Subscript:
            return self._graph_free(e.value, names, seen)
        if t is cst.BinaryOperation:
            return self._graph_free(e.left, names, seen) and self._graph_free(e.right, names, seen)
        if t is cst.UnaryOperation:
            return self._graph_free(e.expression, names, seen)
        if t is not cst.Call:
            return False
        if keyword(e, "requires_grad") is not None:
            return False
        func = e.func
        if isinstance(func, cst.Attribute) and self.file_model.names.qualify(dotted(func)) is None:
            if func.attr.value in KILL_METHODS:
                return True
            # a reshape or move (``.view(-1)``, ``.to(device)``) has the graph of what it reshapes
            return func.attr.value in SHAPE_METHODS and self._graph_free(func.value, names, seen)
        qualified = self.file_model.names.qualify(dotted(func)) or ""
        return qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in GRAPH_FREE_FACTORIES

    def _graph_free_local(self, name: str, names: frozenset, seen: set) -> bool:
        if name in names or name in self.scope.params:
            return False
        if name in seen:
            return True  # ``baseline = 0.9 * baseline + 0.1 * r``: the other bindings decide
        seen.add(name)
        bindings = [a for a in self.scope.assignments if any(name in bound_paths(t) for t in a.targets)]
        return bool(bindings) and all(a.kind in ("assign", "aug") and len(a.targets) == 1 and dotted(a.targets[0]) == name
                   and self._graph_free(a.value, names, seen) for a in bindings)


def values_indices_pair(file_model: FileModel, expr: cst.Call) -> bool:
    """``torch.max(out, 1)``, ``out.max(dim=1)``, ``out.topk(k)``, ``torch.sort(out)``:
    a call that returns ``(values, indices)``. ``torch.max(a, b)`` (elementwise) is none."""
    func = expr.func
    method = isinstance(func, cst.Attribute) and file_model.names.qualify(dotted(func)) is None
    if method:
        assert isinstance(func, cst.Attribute)  # ``method`` says so
        name, dim_at = func.attr.value, 0
    else:
        qualified = file_model.names.qualify(dotted(func))
        if qualified is None or qualified.count(".") != 1 or not qualified.startswith("torch."):
            return False
        name, dim_at = qualified.split(".", 1)[1], 1
    if name in PAIR_ALWAYS:
        return True
    if name not in PAIR_WITH_DIM:
        return False
    if keyword(expr, "dim") is not None:
        return True
    return _is_dim(positional(expr, dim_at))


def _is_dim(expr: Optional[cst.BaseExpression]) -> bool:
    """``1``, ``-1``, ``dim``, ``self.axis``: an axis, not a second tensor."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    if isinstance(expr, cst.Integer):
        return True
    path = dotted(expr) if expr is not None else None
    return path is not None and any(t in ("dim", "axis") for t in tokens(last_name(path)))


def _indices_of_pair(file_model: FileModel, expr: cst.Subscript) -> bool:
    """``pair[1]`` of a values-indices pair."""
    if not isinstance(expr.value, cst.Call) or len(expr.slice) != 1:
        return False
    index = expr.slice[0].slice
    return (isinstance(index, cst.Index) and isinstance(index.value, cst.Integer)
            and index.value.value == "1" and values_indices_pair(file_model, expr.value))


def _creates_graph(expr: cst.Call) -> bool:
    """``autograd.grad(..., create_graph=True)`` (or a flag we cannot read): the
    gradients are themselves part of a graph. Without it they carry none."""
    flag = keyword(expr, "create_graph")
    return flag is not None and literal_bool(flag) is not False
