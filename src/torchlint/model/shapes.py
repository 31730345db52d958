"""Values that are surely 0-dim tensors: losses and full reductions.

Before PyTorch 0.4 a loss or a ``.sum()`` was a one-element Variable and
``loss.data[0]`` read its number; since then they are 0-dim tensors, which
cannot be indexed. TL505 asks this module whether the tensor in front of such
an index is surely 0-dim. "Surely" is the point: a batch, a model output, a
``sum(1)`` or a loss built with ``reduction='none'`` has rows, and reading
row 0 of it is correct. Unknown is not 0-dim.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model.constructions import Binding, reaching_bindings
from torchlint.model.expr import dotted, keyword, positional
from torchlint.model.project_calls import project_callee
from torchlint.model.vocab import (
    FULL_REDUCTIONS, LOSS_FUNCTIONS, SHAPE_KEEPING_METHODS, full_reduction_arguments, numbers_and_zero_dim, tokens,
    visibly_not_torch,
)
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model.records import Assignment
    from torchlint.model import FileModel, Scope

# Torch functions of one tensor that keep its shape.
_ELEMENTWISE = frozenset("abs neg sqrt exp log sigmoid tanh relu square".split())
_ARITHMETIC_UPDATES = frozenset(
    ("AddAssign", "SubtractAssign", "MultiplyAssign", "DivideAssign", "FloorDivideAssign", "PowerAssign", "ModuloAssign")
)
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Power, cst.Modulo)
# Words that name a loss function or module (``criterion``, ``loss_fn``), not a loss value.
_CALLABLE_WORDS = frozenset(("fn", "func", "function", "fun", "module", "layer", "obj"))


def is_criterion_name(name: str) -> bool:
    """``criterion``, ``crit``, ``loss_fn``, ``loss_func``, ``mse_loss_function``."""
    toks = tokens(name)
    if "criterion" in toks or "crit" in toks:
        return True
    return any(t.endswith("loss") for t in toks) and bool(toks) and toks[-1] in _CALLABLE_WORDS


def reduces(call: cst.Call) -> Optional[bool]:
    """Does a loss call or construction keep torch's default of reducing to one number?
    False for ``reduction='none'`` and ``reduce=False``, None when it is not a literal."""
    reduce = keyword(call, "reduce")  # the 0.3-era flag wins over ``reduction`` when given
    if reduce is not None:
        if not (isinstance(reduce, cst.Name) and reduce.value in ("True", "False")):
            return None
        if reduce.value == "False":
            return False
    reduction = keyword(call, "reduction")
    if reduction is not None:
        if not isinstance(reduction, cst.SimpleString):
            return None
        return reduction.evaluated_value in ("mean", "sum", "batchmean")
    for arg in call.args:  # ``nn.MSELoss(None, False)``: size_average, reduce given by position
        if arg.keyword is None and isinstance(arg.value, (cst.Name, cst.SimpleString)):
            if getattr(arg.value, "value", None) == "False" or (
                    isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == "none"):
                return False
    return True


class ZeroDim:
    """Answers "is this expression surely a 0-dim tensor?" for one file."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self._names_in_progress: set = set()
        self._functions_in_progress: set = set()

    def holds(self, expr: Optional[cst.BaseExpression], scope: Scope, order: Optional[int] = None) -> bool:
        """``order``, where known, is that of the statement reading ``expr``: a name is then
        also judged by the bindings that reach that read (``loss = per_element * w`` then
        ``loss = loss.mean()``: 0-dim after the second)."""
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t is cst.Name:
            return self._name(e.value, scope, order)
        if t is cst.Attribute:
            return e.attr.value == "data" and self.holds(e.value, scope, order)
        if t is cst.Call:
            return self._call(e, scope, order)
        if t is cst.BinaryOperation:
            return isinstance(e.operator, _ARITHMETIC) and self._arithmetic(e, scope, order)
        if t is cst.UnaryOperation:
            return isinstance(e.operator, (cst.Minus, cst.Plus)) and self.holds(e.expression, scope, order)
        return False

    # -- calls -------------------------------------------------------------
    def _call(self, call: cst.Call, scope: Scope, order: Optional[int]) -> bool:
        func = call.func
        qualified = self.file_model.names.qualify(dotted(func))
        if qualified is not None and qualified.count(".") == 1:  # torch.sum(x)
            name = qualified.split(".")[1]
            first = positional(call, 0)
            if name in FULL_REDUCTIONS:
                return first is not None and _full_reduction_args(call, name, first=1)
            if name in _ELEMENTWISE and len(call.args) == 1 and first is not None:  # torch.abs(diff)
                return self.holds(first, scope, order)
        elif qualified is None and isinstance(func, cst.Attribute):  # x.sum()
            method = func.attr.value
            if method in FULL_REDUCTIONS and _full_reduction_args(call, method, first=0):
                return not _visibly_not_torch(func.value)
            # ``.to(device)`` and ``.cpu()`` move a tensor; none of these change its shape.
            if method in SHAPE_KEEPING_METHODS and (method == "to" or not call.args):
                return self.holds(func.value, scope, order)
        return self.is_reduced_loss(call, scope)

    def is_reduced_loss(self, call: cst.Call, scope: Scope) -> bool:
        """A loss that reduces to one number: ``F.cross_entropy(out, y)``, ``criterion(out, y)``
        for a criterion built as ``nn.CrossEntropyLoss()`` or passed in, a loss function of
        this file that returns one, ``nn.MSELoss()(a, b)``."""
        if isinstance(call.func, cst.Call):
            return self._torch_loss_class(call.func) and reduces(call.func) is True and bool(call.args)
        callee = dotted(call.func)
        if callee is None or not call.args:
            return False
        qualified = self.file_model.names.qualify(callee)
        if qualified is not None:
            name = qualified.rsplit(".", 1)[-1]
            return (qualified.startswith("torch.nn.functional.") and name in LOSS_FUNCTIONS
                    and reduces(call) is True)
        site = self.file_model.call_of(call)
        target = self.file_model.resolve(site) if site is not None else None
        if target is not None:
            return self.returns_zero_dim(target)
        imported = project_callee(self.file_model, site) if site is not None else None
        if imported is not None:  # ``from losses import td_loss``: its module's answer, by this definition
            return bool(imported.ask(returns_zero_dim))
        bindings = [a for a in self.file_model.assignments if any(dotted(t) == callee for t in a.targets)]
        if bindings:
            return all(self._binds_reducing_criterion(a) for a in bindings)
        if callee.split(".", 1)[0] in self.file_model.names.bound_by_import:
            return False  # someone else's function: it may return anything
        return is_criterion_name(callee.rsplit(".", 1)[-1])

    def _torch_loss_class(self, call: cst.Call) -> bool:
        """``nn.CrossEntropyLoss(...)``: through the imports, or through ``nn`` itself where
        no import binds it (``from model import *`` hands old scripts their ``nn``)."""
        callee = dotted(call.func) or ""
        qualified = self.file_model.names.qualify(callee)
        if qualified is None and callee.startswith("nn.") and callee.count(".") == 1 \
                and "nn" not in self.file_model.names.bound_by_import:
            qualified = "torch." + callee
        name = (qualified or "").rsplit(".", 1)[-1]
        return (qualified or "").startswith("torch.nn.") and name.endswith("Loss") and not name.endswith("WithLoss")

    def _binds_reducing_criterion(self, assignment: Assignment) -> bool:
        value = assignment.value
        return (assignment.kind == "assign" and isinstance(value, cst.Call)
                and self._torch_loss_class(value) and reduces(value) is True)

    def returns_zero_dim(self, function: Scope) -> bool:
        """Is every value ``function`` returns (at least one) a 0-dim tensor?"""
        if function in self._functions_in_progress:
            return False  # recursion proves nothing
        self._functions_in_progress.add(function)
        try:
            returns = function.returns
            return bool(returns) and all(v is not None and self.holds(v, function, site.order)
                                         for site, v in returns)
        finally:
            self._functions_in_progress.discard(function)

    # -- names and arithmetic ----------------------------------------------
    def _name(self, name: str, scope: Scope, order: Optional[int] = None) -> bool:
        """Every binding of ``name`` in the scope (whichever reaches a use, in whatever
        branch or iteration) is a 0-dim tensor or a number, and at least one is a tensor:
        ``loss = 0`` then ``loss += criterion(out, y)`` ends a 0-dim tensor (or the int
        0, which has no ``.data`` at all). Nothing else may bind it there. Failing that,
        where the read's ``order`` is known, every binding that may reach the read is one."""
        if name in scope.params:
            return False
        if self._every_binding(name, scope):
            return True
        return order is not None and self._reaching(name, scope, order)

    def _every_binding(self, name: str, scope: Scope) -> bool:
        key = (id(scope), name, None)
        if key in self._names_in_progress:
            return True  # ``loss = loss / n``: 0-dim if the other bindings are
        values = list(_bound_values(scope, name))
        if not values or any(v is None for v in values):
            return False
        self._names_in_progress.add(key)
        try:
            return numbers_and_zero_dim(values, _is_number, lambda v: self.holds(v, scope))
        finally:
            self._names_in_progress.discard(key)

    def _reaching(self, name: str, scope: Scope, order: int) -> bool:
        """The bindings that may reach the read at ``order`` (``reaching_bindings``, and in a
        loop around the read those after it, which reach the next iteration's read) are each
        a 0-dim tensor or a number, at least one a tensor; each judged where it stands."""
        key = (id(scope), name, order)
        if key in self._names_in_progress:
            return True  # ``loss = loss / n`` in a loop: 0-dim if the other bindings are
        values = _reaching_values(self.file_model, scope, name, order)
        if values is None:
            return False
        self._names_in_progress.add(key)
        try:
            return numbers_and_zero_dim(values, lambda v_at: _is_number(v_at[0]),
                                        lambda v_at: self.holds(v_at[0], scope, v_at[1]))
        finally:
            self._names_in_progress.discard(key)

    def _arithmetic(self, expr: cst.BinaryOperation, scope: Scope, order: Optional[int]) -> bool:
        """``loss_a + 0.1 * loss_b``: numbers and 0-dim tensors, at least one tensor."""
        return numbers_and_zero_dim(_operands(expr), _is_number, lambda op: self.holds(op, scope, order))


def _operands(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        yield from _operands(expr.left)
        yield from _operands(expr.right)
    else:
        yield expr


def _full_reduction_args(call: cst.Call, name: str, first: int) -> bool:
    keywords = [arg.keyword.value for arg in call.args if arg.keyword is not None]
    positionals = sum(1 for arg in call.args if arg.keyword is None)
    return full_reduction_arguments(name, first, positionals, keywords, any(arg.star for arg in call.args))


def _visibly_not_torch(receiver: cst.BaseExpression) -> bool:
    chain, node = [], receiver
    while True:
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute):
                chain.append((node.func.attr.value, True))
                node = node.func.value
            else:
                node = node.func
        elif isinstance(node, cst.Attribute):
            chain.append((node.attr.value, False))
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return visibly_not_torch(chain, node.value if isinstance(node, cst.Name) else None)


def _is_number(expr: Optional[cst.BaseExpression]) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        return _is_number(expr.expression)
    return isinstance(expr, (cst.Integer, cst.Float))


def _bound_values(scope: Scope, name: str) -> Iterator[Optional[cst.BaseExpression]]:
    """The value of each binding of ``name`` in ``scope``, and the right side of each
    ``name += value``; None for one that is neither (a loop or ``with`` target, ``del``,
    unpacking of an unknown value, ``name @= w``)."""
    for a in scope.assignments:
        for target in a.targets:
            if not _binds(target, name):
                continue
            if a.kind == "aug":
                yield a.value if a.op in _ARITHMETIC_UPDATES else None
            else:
                yield _element_for(target, a.value, name) if a.kind == "assign" else None


def _reaching_values(file_model: FileModel, scope: Scope, name: str, order: int,
                     _seen: Optional[Set[int]] = None) -> Optional[List[Tuple[cst.BaseExpression, int]]]:
    """``(value, order of its binding)`` for each binding of ``name`` that may reach a read at
    ``order`` in ``scope``; for ``name += value``, ``value`` and what reaches that statement
    (the sum has the shape of both). None when one of them binds no value we can read (a
    loop target, ``del``, unpacking) or none binds the name."""
    seen = set() if _seen is None else _seen
    if order in seen:
        return []
    seen.add(order)
    bindings = list(reaching_bindings(file_model, scope, name, order))
    for loop in scope.loops:
        if loop.contains(order):  # bound later in the loop: reaches the read on the next pass
            bindings += [b for a in scope.assignments if order <= a.order < loop.end
                         for b in _bindings_named(a, name)]
    if not bindings:
        return None
    out = []
    for b in bindings:
        a = b.assignment
        if a.kind == "aug":
            if a.op not in _ARITHMETIC_UPDATES or a.value is None:
                return None
            before = _reaching_values(file_model, scope, name, a.order, seen)
            if before is None:
                return None
            out += before
            out.append((a.value, a.order))
            continue
        value = b.value if a.kind == "assign" and b.index is None else None
        if value is None:
            return None
        out.append((value, a.order))
    return out


def _bindings_named(a: Assignment, name: str) -> Iterator[Binding]:
    for target in a.targets:
        if _binds(target, name):
            yield Binding(a, _element_for(target, a.value, name) if a.kind == "assign" else None, None)


def _element_for(target: cst.BaseExpression, value: Optional[cst.BaseExpression],
                 name: str) -> Optional[cst.BaseExpression]:
    """``value`` for ``name = value``; the matching element for ``a, name = x, y``; None
    where a tuple target unpacks something else (its elements are unknown)."""
    if isinstance(target, cst.Name):
        return value
    if isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)):
        if len(value.elements) == len(target.elements):
            for el, val in zip(target.elements, value.elements):
                if isinstance(el, cst.StarredElement) or isinstance(val, cst.StarredElement):
                    return None
                if _binds(el.value, name):
                    return _element_for(el.value, val.value, name)
    return None


def _binds(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(el.value, name) for el in target.elements)
    if isinstance(target, cst.StarredElement):
        return _binds(target.value, name)
    return False


def zero_dim(file_model: FileModel) -> ZeroDim:
    return file_model.derived(ZeroDim)


def returns_zero_dim(file_model: FileModel, function: Scope) -> bool:
    """Does ``function`` of ``file_model`` surely return a 0-dim tensor? Asked of the file's own
    functions and, through ``ProjectFunction.ask``, of those of the project's other modules."""
    return zero_dim(file_model).returns_zero_dim(function)


# -- finding ``X.data[0]`` ---------------------------------------------------

def scalar_index(node: cst.Subscript) -> Optional[cst.BaseExpression]:
    """For ``X.data[0]``, ``X.data.cpu()[0]``, ``X.cpu().data.numpy()[0]``: ``X``.
    The index must be the literal 0 and the path to it must go through ``.data`` (the
    pre-0.4 idiom); the steps after ``X`` keep its shape. None for anything else."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    index = node.slice[0].slice.value
    if not (isinstance(index, cst.Integer) and index.value == "0"):
        return None
    expr, through_data = node.value, False
    while True:
        if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            through_data, expr = True, expr.value
        elif (isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute)
              and expr.func.attr.value in ("cpu", "cuda", "detach", "numpy", "clone")):
            expr = expr.func.value
        else:
            break
    return expr if through_data else None


def legacy_scalar_indexes(file_model: FileModel) -> list:
    """``(scope, subscript, X, order)`` for every ``X.data[0]`` read in the file (``scalar_index``),
    with the function it stands in (the module for top-level code and class bodies) and the
    order of the statement that reads it (None where no record of it has one). An
    index whose ``X`` names a lambda's parameter or a comprehension's variable is left
    out: that name is not the one the function binds."""
    return file_model.derived(_legacy_scalar_indexes)


def _legacy_scalar_indexes(file_model: FileModel) -> list:
    targets = None
    out = []
    for node in file_model.subscripts:
        subject = scalar_index(node)
        if subject is None:
            continue
        if targets is None:
            targets = {id(t) for a in file_model.assignments for t in _all_targets(a.targets)}
        if id(node) in targets:
            continue
        scope, local = _function_and_local_names(file_model, node)
        if not local.intersection(_names_in(subject)):
            out.append((scope, node, subject, _statement_order(file_model, scope, node)))
    return out


def bound_around(file_model: FileModel, node: cst.CSTNode) -> set:
    """The names that lambdas and comprehensions around ``node`` bind, up to its function:
    ``p`` in ``[p.add_(1) for p in params]`` is not the function's (nor the module's) ``p``."""
    return _function_and_local_names(file_model, node)[1]


def _statement_order(file_model: FileModel, scope: Scope, node: cst.CSTNode) -> Optional[int]:
    """The order of the statement holding ``node``: its first call, assignment or return."""
    statement: Optional[cst.CSTNode] = node
    while statement is not None and not isinstance(statement, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        statement = file_model.parents.get(id(statement))
    if statement is None:
        return None
    orders = [c.order for c in scope.calls if c.site.stmt is statement]
    orders += [a.order for a in scope.assignments if a.site.stmt is statement]
    orders += [site.order for site, _ in scope.returns if site.stmt is statement]
    return min(orders, default=None)


def _function_and_local_names(file_model: FileModel, node: cst.CSTNode) -> tuple:
    """The scope of the function ``node`` is in (the module's outside functions), and the
    names that lambdas and comprehensions between the two bind."""
    local: set = set()
    parent = file_model.parents.get(id(node))
    while parent is not None:
        if isinstance(parent, cst.FunctionDef):
            scope = file_model.scope_of_node(parent)
            if scope is not None:
                return scope, local
        elif isinstance(parent, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            local |= _locally_bound(parent)
        parent = file_model.parents.get(id(parent))
    return file_model.module_scope, local


def _locally_bound(node: Union[cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp]) -> frozenset:
    """The names a lambda's parameters or a comprehension's ``for`` targets bind."""
    if isinstance(node, cst.Lambda):
        params = node.params
        return frozenset(p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params))
    names: Set[str] = set()
    comp: Optional[cst.CompFor] = node.for_in
    while comp is not None:
        names.update(_names_in(comp.target))
        comp = comp.inner_for_in
    return frozenset(names)


def _names_in(expr: cst.BaseExpression) -> Set[str]:
    found: Set[str] = set()

    def enter(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            found.add(node.value)

    walk(expr, enter, lambda node: None)
    return found


def _all_targets(targets: Iterable[cst.BaseExpression]) -> Iterator[cst.BaseExpression]:
    for t in targets:
        yield t
        if isinstance(t, (cst.Tuple, cst.List)):
            yield from _all_targets(el.value for el in t.elements)
        elif isinstance(t, cst.StarredElement):
            yield from _all_targets((t.value,))
