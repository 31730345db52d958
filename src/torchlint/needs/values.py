"""Shapes whose tree question follows values through a scope: what a call's result is used
as, whether a tensor is computed. Each reads Python's tree the way a fact of the model reads
libcst's (named in its docstring), and may say yes more often, never less."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Container, Dict, List, Optional, Set, Tuple, Union

from torchlint.model.ast_reading import assignment_targets, ast_dotted, flat_targets
from torchlint.model.function_summaries import may_rewalk
from torchlint.model.loaded_objects import OBJECT_METHODS, SAME_VALUE_METHODS
from torchlint.model.tensors import TENSOR_ATTRS, TENSOR_ONLY_ATTRS, TENSOR_ONLY_METHODS, VIEW_METHODS
from torchlint.model.tensors import returns_no_tensor
from torchlint.model.module_state import LOSS_BASES
from torchlint.model.vocab import EVAL_FUNCTION_DEF, FORWARD_METHODS, LEAF_WRAPPERS, LOADER_SPELLING, SHAPE_METHODS
from torchlint.model.vocab import STORE_METHODS, TENSOR_FACTORIES, is_eval_function_name, is_loader_name
from torchlint.model.vocab import is_loss_name, last_name
from torchlint.needs.shapes import TRAINS, Call, Defines, FollowsValues, Need
from torchlint.tree_gate import TreeIndex, all_nodes, called_name, iterable_names, loop_nodes, names_in


@dataclass(frozen=True)
class ResultUsedAsObject(FollowsValues, Need):
    """The result of one of ``call``'s calls may be used as a whole pickled object (a module, an
    optimizer, an array): ``loaded_objects.pickled_object_use``'s evidence, asked of Python's tree,
    where it may say yes more often. Called, directly or through a name bound to the result, to an
    entry of it or to it moved (``.to(device)``); or some call of the file is a method only
    modules have (``.eval()``) or a ``from_numpy``."""

    call: Call

    def text(self) -> Tuple[str, ...]:
        return self.call.text()

    def found_in(self, index: TreeIndex) -> bool:
        results = self.call.calls(index)
        return bool(results) and _used_as_object(index.module_nodes(), results)


def _used_as_object(nodes: List[ast.AST], results: List[ast.Call]) -> bool:
    bindings = [(assignment_targets(node), node.value)
                for node in nodes if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None]
    held: Set[str] = set()
    grown = True
    while grown:  # names bound to a result, to an entry of a held name, or to a held name moved
        grown = False
        for targets, value in bindings:
            source = value.value if isinstance(value, ast.Subscript) else (
                value.func.value if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in SAME_VALUE_METHODS else None)
            if any(value is result for result in results) or (isinstance(source, ast.Name) and source.id in held):
                new = {t.id for t in targets if isinstance(t, ast.Name)} - held
                held |= new
                grown = grown or bool(new)
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in held or any(func is result for result in results):
            return True
        if called_name(node) in OBJECT_METHODS or called_name(node) == "from_numpy":
            return True
    return False


@dataclass(frozen=True)
class RequiresGradForcedOnAResult(FollowsValues, Need):
    """``t.requires_grad = True`` or ``t.requires_grad_()`` (``(True)``) where ``t`` may be a call's
    result: bound earlier in the same scope from a call with an input (not a tensor factory,
    ``torch.zeros(n)``), named like a loss and bound earlier, or the call itself. The tree
    reading of ``model/leaves.py``'s ``produced_by_graph_call``, which may say yes more often."""

    def text(self) -> Tuple[str, ...]:
        return (r"requires_grad\s*=\s*True|requires_grad_\(\s*(?:(?:requires_grad\s*=\s*)?True\s*)?\)",)

    def found_in(self, index: TreeIndex) -> bool:
        for body in index.bodies_mentioning("requires_grad"):
            nodes = index.nodes_of(body)
            forced = [(node, target) for node in nodes for target in (_forced(node),) if target is not None]
            if forced:
                computed = _computed_before(nodes)
                if any(computed(node, target) for node, target in forced):
                    return True
        return False


def _forced(node: ast.AST) -> Optional[ast.expr]:
    """The tensor of ``t.requires_grad = True`` or ``t.requires_grad_()``/``(True)``, else None."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                return target.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        flag = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
        if flag is None or (isinstance(flag, ast.Constant) and flag.value is True):
            return node.func.value
    return None


def _computed_before(nodes: List[ast.AST]) -> Callable[[ast.AST, ast.expr], bool]:
    """Whether a forced tensor may be computed: bound in ``nodes`` (its scope) from a call
    before it is forced (``reaching_value`` reads the last binding before; any earlier one
    from a call is enough here), named like a loss and bound before, or a call itself."""
    bindings: Dict[Optional[str], List[Tuple[Tuple[int, int], bool]]] = {}  # path -> [(position, may be computed)]
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            computes = _may_compute(node.value) or (
                isinstance(node.value, (ast.Tuple, ast.List)) and any(map(_may_compute, node.value.elts)))
            for target in assignment_targets(node):
                for t in flat_targets(target):
                    bindings.setdefault(ast_dotted(t), []).append((_position(node), computes))

    def computed(forcing: ast.AST, target: ast.expr) -> bool:
        path = ast_dotted(target)
        if path is None:
            return _may_compute(target)
        loss_named = "loss" in path.lower()
        at = _position(forcing)
        return any(where < at and (computes or loss_named) for where, computes in bindings.get(path, ()))
    return computed


def _position(node: ast.AST) -> Tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]  # a statement or an expression


_NO_GRAPH_CALLS = TENSOR_FACTORIES | LEAF_WRAPPERS


def _may_compute(expr: ast.expr) -> bool:
    """Could ``expr`` be a forward pass or a loss call, maybe reduced or moved, as
    ``produced_by_graph_call`` accepts: a call with an input, not a tensor factory
    (``torch.zeros(n)``) or leaf wrapper, before shape methods only."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in SHAPE_METHODS:
        expr = expr.func.value
    return isinstance(expr, ast.Call) and bool(expr.args) and called_name(expr) not in _NO_GRAPH_CALLS


@dataclass(frozen=True)
class TensorKeptOnContext(FollowsValues, Need):
    """A static ``forward`` (a custom ``autograd.Function``'s) that stores on its first argument
    something that may be an argument, a view of one, an output, or a tensor computed from
    them: ``model/tensors.py``'s ``TensorNames`` asked of Python's tree, where it may say yes
    more often. The text asks for ``ctx.x =`` or for a ``forward`` whose first argument has
    another name (``self`` aside: a module's)."""

    def text(self) -> Tuple[str, ...]:
        return (r"Function", r"ctx\.\w+\s*(:[^=]*)?=[^=]|def\s+forward\s*\(\s*(?!ctx\b|self\b)\w")

    def found_in(self, index: TreeIndex) -> bool:
        return any(_stores_a_tensor_on_its_context(index, f) for f in index.definitions.get("forward", ()))


def _stores_a_tensor_on_its_context(index: TreeIndex, function: ast.AST) -> bool:
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = function.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if not positional or not any(ast_dotted(d) == "staticmethod" for d in function.decorator_list):
        return False
    ctx, *params = positional
    params += [a.arg for a in (*arguments.kwonlyargs, arguments.vararg, arguments.kwarg) if a is not None]
    nodes = index.nodes_of(function.body)
    names = set(params) | {n.id for r in nodes if isinstance(r, ast.Return) and r.value is not None
                           for n in (r.value.elts if isinstance(r.value, (ast.Tuple, ast.List)) else [r.value])
                           if isinstance(n, ast.Name)}
    maybe_tensors = None
    for node in nodes:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if not any(_on(t, ctx) for t in targets) or node.value is None:
            continue
        if _views(node.value, names):
            return True
        if maybe_tensors is None:
            maybe_tensors = _maybe_tensor_names(function, params, nodes)
        if _may_compute_a_tensor(node.value, maybe_tensors):
            return True
    return False


def _maybe_tensor_names(function: Union[ast.FunctionDef, ast.AsyncFunctionDef], params: list, nodes: list) -> set:
    """Every name ``TensorNames`` may take for a tensor, and more: each name the forward
    binds, and each argument it uses as ``TensorNames`` looks for (its evidence, widened:
    any annotation, any argument of any call, ``@``, a tensor-only method or attribute)."""
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    evidence = set()
    arguments = function.args
    for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        if a.annotation is not None:
            evidence.add(a.arg)
    for node in ast.walk(function):  # TensorNames reads nested bodies for attributes
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and (
                node.attr in TENSOR_ONLY_METHODS or node.attr in TENSOR_ONLY_ATTRS):
            evidence.add(node.value.id)
        elif isinstance(node, ast.Call):
            given = [a.value if isinstance(a, ast.Starred) else a for a in node.args]
            evidence.update(a.id for a in given if isinstance(a, ast.Name))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            evidence.update(n.id for n in (node.left, node.right) if isinstance(n, ast.Name))
    return bound | (evidence & set(params))


_COMPARISONS = (ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq, ast.NotEq)


def _may_compute_a_tensor(value: ast.expr, names: set) -> bool:
    """What ``TensorNames.is_tensor`` may call a tensor, and more: a torch operation is any
    call with an argument that may be a tensor."""
    if isinstance(value, ast.Name):
        return value.id in names
    if isinstance(value, ast.Attribute):
        return value.attr in TENSOR_ATTRS and _may_compute_a_tensor(value.value, names)
    if isinstance(value, ast.Subscript):
        return _may_compute_a_tensor(value.value, names)
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and not returns_no_tensor(func.attr) and _may_compute_a_tensor(
                func.value, names):
            return True
        given = [a.value if isinstance(a, ast.Starred) else a for a in value.args]
        return any(_may_compute_a_tensor(v, names) for v in (*given, *(k.value for k in value.keywords)))
    if isinstance(value, ast.BinOp):
        return _may_compute_a_tensor(value.left, names) or _may_compute_a_tensor(value.right, names)
    if isinstance(value, ast.UnaryOp):
        return not isinstance(value.op, ast.Not) and _may_compute_a_tensor(value.operand, names)
    if isinstance(value, ast.Compare):
        return all(isinstance(op, _COMPARISONS) for op in value.ops) and any(
            _may_compute_a_tensor(v, names) for v in (value.left, *value.comparators))
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(_may_compute_a_tensor(v.value if isinstance(v, ast.Starred) else v, names) for v in value.elts)
    if isinstance(value, ast.IfExp):
        return _may_compute_a_tensor(value.body, names) or _may_compute_a_tensor(value.orelse, names)
    return False


def _on(target: ast.expr, ctx: str) -> bool:
    """``ctx.x``, or a tuple or list of targets with one."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_on(t, ctx) for t in target.elts)
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == ctx


def _views(value: ast.expr, names: set) -> bool:
    """Is ``value`` one of ``names`` (the arguments and returned names) or a view of one
    (``x.t()``, ``x[0]``, one in a tuple)? What ``TensorNames.views_param`` and ``is_output``
    need, and more."""
    while True:
        if isinstance(value, ast.Name):
            return value.id in names
        if isinstance(value, (ast.Tuple, ast.List)):
            return any(_views(v, names) for v in value.elts)
        if isinstance(value, ast.Attribute) and value.attr in TENSOR_ATTRS or isinstance(value, ast.Subscript):
            value = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in VIEW_METHODS:
            value = value.func.value
        else:
            return False


@dataclass(frozen=True)
class ParametersHandedToAWalker(FollowsValues, Need):
    """A call hands something built from ``parameters()`` (or a name once bound to it) to a
    function of the file that walks a parameter twice (the summary's ``rewalked``: a helper
    that clips by hand and sees nothing the second time), or to a name from the project's own
    modules: ``grad_flow.rewalking_helper``'s candidates, asked of Python's tree."""

    def text(self) -> Tuple[str, ...]:
        return (r"parameters\s*\(",)

    def found_in(self, index: TreeIndex) -> bool:
        # Only statements that spell ``parameters`` can call it, and only the names bound to
        # such a call (and those statements) can hand one on: two walks of a few statements.
        nodes = list(index.statements_spelling(["parameters"], headers=True))
        # Lines holding a ``parameters()`` call: a node off them cannot hold one, and is not walked.
        lines = {n.lineno for n in nodes if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "parameters"}
        if not lines:
            return False

        def mentions(node: ast.AST) -> bool:
            first, last = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
            return any(first <= line <= last for line in lines) and _calls_parameters(node)

        stored = {t.id for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))
                  and n.value is not None and mentions(n.value)
                  for t in assignment_targets(n) if isinstance(t, ast.Name)}
        if stored:
            nodes = list(index.statements_spelling(["parameters", *stored], headers=True))
        calls = [n for n in nodes if isinstance(n, ast.Call) and any(
            (isinstance(v, ast.Name) and v.id in stored) or mentions(v)
            for v in (*n.args, *(k.value for k in n.keywords)))]
        return bool(calls) and (_to_the_project(index, calls) or _to_a_rewalking_function(index, calls))


def _calls_parameters(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "parameters"
               for n in ast.walk(node))


def _to_the_project(index: TreeIndex, calls: List[ast.Call]) -> bool:
    imported, star = index.names_from_project()
    return any((ast_dotted(c.func) or "").split(".", 1)[0] in imported or (star and isinstance(c.func, ast.Name))
               for c in calls)


def _to_a_rewalking_function(index: TreeIndex, calls: List[ast.Call]) -> bool:
    called = {called_name(c) for c in calls}
    return any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and may_rewalk(f)
               for name in called & index.function_names for f in index.definitions.get(name, ()))


@dataclass(frozen=True)
class StoresInAnIteration(FollowsValues, Need):
    """A loop that may keep a value (``xs.append(v)``, ``total += v``, ``d[k] = v``, ``total = total
    + v``) and is an iteration: the file trains, or the loop is in a function named like
    evaluation, or runs over loader-named data. Not a loop of a forward: one call, not a step."""

    def text(self) -> Tuple[str, ...]:
        return ("|".join((*TRAINS.text(), EVAL_FUNCTION_DEF, LOADER_SPELLING)),)

    def found_in(self, index: TreeIndex) -> bool:
        trains = TRAINS.found_in(index)
        for function, loop in index.loops:
            if function in FORWARD_METHODS:
                continue
            iteration = trains or is_eval_function_name(function) or any(map(is_loader_name, iterable_names(loop)))
            if iteration and any(_may_store(n) for n in loop_nodes(loop)):
                return True
        return False


@dataclass(frozen=True)
class ForwardAddsToSelf(FollowsValues, Need):
    """A forward runs a method that may add a loss to ``self``: ``module_state.py``'s question,
    asked of methods (functions right in a class body) as the model asks it. The method's class
    is a criterion, or a loss is named where it is kept (``self.losses[k] += v``) or handed on
    to a method of ``self`` (``self.meter.update(loss)``)."""

    def text(self) -> Tuple[str, ...]:
        return Defines(*sorted(FORWARD_METHODS)).text()

    def found_in(self, index: TreeIndex) -> bool:
        functions = {name: [d for d in defs if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))]
                     for name, defs in index.definitions.items()}
        todo = [name for name in FORWARD_METHODS if functions.get(name)]
        if not todo:
            return False
        methods = [(cls, stmt) for defs in index.definitions.values() for cls in defs
                   if isinstance(cls, ast.ClassDef) for stmt in cls.body
                   if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))]
        criteria = {id(method): _criterion(cls) for cls, method in methods}
        keepers = _Keepers(index, methods)
        if not any(criteria.values()) and not keepers.loss_named_keeping():
            return False
        # What a forward runs, at any depth: calls matched to the file's functions by their last
        # name (more than ``FileModel.part_of_forward`` resolves, never less). An ``__init__``
        # that appends layers to ``self`` is not reached, so model files stay out.
        reached = set(todo)
        while todo:
            for function in functions[todo.pop()]:
                criterion = criteria.get(id(function))  # None: no method
                for node in index.nodes_of(function.body):
                    if criterion is not None and keepers.keeps(node) and (criterion or _names_a_loss(node)):
                        return True
                    if isinstance(node, ast.Call):
                        name = called_name(node)
                        if name is not None and name not in reached and functions.get(name):
                            reached.add(name)
                            todo.append(name)
        return False


_STORES = (ast.Call, ast.AugAssign, ast.Assign)  # the statements ``_stores_into_self`` reads


def _self_sum(target: ast.AST, value: ast.AST) -> bool:
    """``self.total = self.total + v``: ``stores.self_sum`` on the ast."""
    path = ast_dotted(target)
    return (path is not None and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add)
            and path in (ast_dotted(value.left), ast_dotted(value.right)))


def _stores_into_self(node: ast.AST) -> bool:
    """``self.total += v``, ``self.losses[k] += v``, ``self.history.append(v)``,
    ``self.total = self.total + v``: what a forward call may add to its module's state."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STORE_METHODS:
        target: ast.AST = node.func.value
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        target = node.target
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_sum(node.targets[0], node.value):
        target = node.targets[0]
    else:
        return False
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return isinstance(target, ast.Name) and target.id == "self"


def _criterion(cls: ast.ClassDef) -> bool:
    """Named as a loss, or a ``_Loss`` subclass: ``module_state._about_losses``'s class test."""
    return is_loss_name(cls.name) or any(last_name(ast_dotted(base) or "") in LOSS_BASES for base in cls.bases)


def _names_a_loss(node: ast.AST) -> bool:
    return any(map(is_loss_name, names_in(node)))


def _hands_to_self(call: ast.Call, keepers: Container[str]) -> bool:
    """``self._track(v)``, ``self.meter.update(v)``: a value handed to a method of ``self`` or of
    one of its attributes, which ``module_state`` follows into that method when it is one of
    the file's ``keepers`` (methods that store into their ``self``)."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in keepers and bool(call.args or call.keywords) \
        and (ast_dotted(call.func.value) or "").split(".", 1)[0] == "self"


def _may_store(node: ast.AST) -> bool:
    """``xs.append(v)``, ``total += v``, ``d[k] = v``, ``total = total + v``."""
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Attribute) and node.func.attr in STORE_METHODS
    if isinstance(node, ast.AugAssign):
        return True
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Subscript) for t in node.targets) or isinstance(node.value, ast.BinOp)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Subscript) or isinstance(node.value, ast.BinOp)
    return False


# Every name ``is_loss_name`` takes spells one: its tokens are ``[A-Z]?[a-z]+`` or capitals only.
_LOSS_SPELLINGS = ("loss", "Loss", "LOSS", "crit", "Crit", "CRIT")


class _Keepers:
    """Which statements of the file's methods keep a value in ``self``, a
    store (``_stores_into_self``) or a value handed to a method of the file that stores into its
    ``self`` (``_hands_to_self``); each method asked at most once."""

    def __init__(self, index: TreeIndex, methods: list) -> None:
        self.index = index
        self.methods: Dict[str, list] = {}
        for _, method in methods:
            self.methods.setdefault(method.name, []).append(method)
        self._storing: Dict[str, bool] = {}

    def keeps(self, node: ast.AST) -> bool:
        return (isinstance(node, _STORES) and _stores_into_self(node)
                or isinstance(node, ast.Call) and _hands_to_self(node, self))

    def __contains__(self, name: object) -> bool:
        """Whether a method of this name stores into its ``self`` (``keepers`` of ``_hands_to_self``)."""
        if not isinstance(name, str):
            return False
        found = self._storing.get(name)
        if found is None:
            found = self._storing[name] = any(
                isinstance(node, _STORES) and _stores_into_self(node)
                for method in self.methods.get(name, ()) for node in all_nodes(method))
        return found

    def loss_named_keeping(self) -> bool:
        """Whether any statement naming a loss keeps a value in ``self``: with no criterion class
        in the file, what a forward may add to its state must name a loss (``_names_a_loss``)."""
        return any(map(self.keeps, self.index.statements_spelling(_LOSS_SPELLINGS, headers=True)))
