"""Leaves and computed values: where a name got its value, and whether grad is surely on.

TL402-TL404 ask of one name at one point: what binding reaches here (a forward
pass, a loss, a tensor factory, a loop variable, a parameter of the
function)? Is this code known to run with autograd recording, or might a
caller in another file wrap it in ``no_grad``? And does the code treat the
name as a leaf it wants gradients for (reads ``x.grad``, passes it as
``inputs`` to ``autograd.grad``)? Answers are cheap readers over the
model's per-scope assignments and calls.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, keyword, positional, referenced_paths
from torchlint.model.grad import GradMode
from torchlint.model.vocab import FRESH_METHODS, GRAPH_CUT_METHODS, LEAF_WRAPPERS, SHAPE_METHODS, TENSOR_FACTORIES

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, CallSite, Scope
    from torchlint.model import FileModel


def known_grad_scope(file_model: FileModel, scope: Scope, _seen: Optional[FrozenSet[int]] = None, *,
                     forward_records: bool = False) -> bool:
    """Does autograd surely record in ``scope``, whoever calls it?

    Module-level code does, and so does a function that itself backpropagates
    (its loss needs grad), or calls with grad on a function of this file that does
    so in its caller's grad mode (``backprop(loss)``). Otherwise only when every caller is in this module,
    records at the call, and is itself known to record: a helper with no
    caller here may run under a caller's no_grad. A class's ``__init__`` is
    called where the class is built (``Net()``, ``Encoder(...)`` in another
    ``__init__``). With ``forward_records``, a model's ``forward`` counts as
    recording: training runs it with grad on, whatever evaluation does.
    """
    if _seen and id(scope) in _seen:
        return False  # recursion: a cycle proves nothing
    seen = (_seen or frozenset()) | {id(scope)}  # the callers on this path only
    if scope.is_module:
        return True
    if scope.decorator_grad is not None:
        return scope.decorator_grad is GradMode.GRAD
    if file_model.differentiations_in(scope):
        return True
    if file_model.derived(_calls_a_backprop_with_grad, scope):
        return True  # ``backprop(loss)``: its loss needs grad as much as one backpropagated here
    if scope.class_name is not None and scope.name == "training_step":
        return True  # Lightning runs it with grad enabled
    if forward_records and scope.name == "forward" and file_model.is_module_class(scope.class_name):
        return True
    callers = file_model.callers.get(scope)
    if not callers and scope.class_name is not None and scope.name == "__init__":
        callers = constructions(file_model, scope.class_name)
    if not callers:
        return False
    return all(
        file_model.grad_at(c.site) is GradMode.GRAD
        and known_grad_scope(file_model, c.scope, seen, forward_records=forward_records)
        for c in callers
    )


def _calls_a_backprop_with_grad(file_model: FileModel, scope: Scope) -> bool:
    """``scope`` calls with grad on a function of this file that backpropagates as called (kept
    per scope: ``known_grad_scope`` asks it again of every caller on every path)."""
    return any(file_model.grad_at(c.site) is GradMode.GRAD and _backpropagates_as_called(file_model, c)
               for c in scope.calls)


def _backpropagates_as_called(file_model: FileModel, call: CallSite) -> bool:
    """``call`` runs a function of this file that backpropagates in the grad mode of its
    caller: no grad-mode decorator, its backward in no ``with`` block that sets the mode."""
    target = file_model.resolve(call)
    return target is not None and target.decorator_grad is None and any(
        c.site.grad is None and not any(order < c.order for order, _ in target.grad_switches)
        for c in file_model.differentiations_in(target))


def constructions(file_model: FileModel, cls: str) -> list:
    """The calls in this file that build ``cls`` or a class of this file derived from it
    (and so run its ``__init__``)."""
    return file_model.derived(_constructions, cls)


def _constructions(file_model: FileModel, cls: str) -> list:
    classes, todo = {cls}, [cls]
    while todo:
        base = todo.pop()
        for sub, bases in file_model.class_bases.items():
            if sub not in classes and base in bases:
                classes.add(sub)
                todo.append(sub)
    return [c for c in file_model.calls if c.callee in classes]


def argument_at_calls(file_model: FileModel, scope: Scope, name: str) -> list:
    """``[(call, argument)]`` for every call of ``scope`` in this module, ``argument`` being
    what the call binds to the parameter ``name`` (None where the default is used).
    Empty when the function has no caller here, or ``name`` is not a plain parameter."""
    node = scope.node
    assert isinstance(node, cst.FunctionDef)  # a function's parameter
    params = node.params
    positional_names = [p.name.value for p in (*params.posonly_params, *params.params)]
    keyword_names = positional_names + [p.name.value for p in params.kwonly_params]
    if name not in keyword_names:
        return []
    out = []
    for call in file_model.callers.get(scope, ()):
        if any(arg.star for arg in call.node.args):
            return []  # ``f(*args)``, ``f(**cfg)``: cannot tell what binds where
        names = positional_names
        if scope.class_name is not None and names and (call.callee or "").startswith(("self.", "cls.")):
            names = names[1:]  # ``self.helper(x)``: ``self`` is bound already
        value = keyword(call.node, name)
        if value is None and name in names:
            value = positional(call.node, names.index(name))
        out.append((call, value))
    return out


def reads_module_binding(scope: Scope, name: str, order: int) -> bool:
    """Does ``name`` read at ``order`` in the function ``scope`` hold what the module binds
    to it (module state: ``W = torch.randn(3, 3, requires_grad=True)`` at the top of a
    script, written in ``train_step``)? It does when the function declares it ``global``
    and has not rebound it before ``order`` (``W -= g`` rebinds nothing), or when neither
    the function nor one around it binds it (a closure's name is the outer function's),
    and the module binds it somewhere."""
    if scope.is_module:
        return False
    inner: Optional[Scope] = scope
    if name in scope.global_names:
        if any(a.order < order and a.kind != "aug" and _binds(a, name) for a in scope.assignments):
            return False
        inner = None
    while inner is not None and not inner.is_module:
        if name in inner.params or name in inner.global_names or any(_binds(a, name) for a in inner.assignments):
            return False  # its own, or a closure's (a ``global`` around a closure: too rare to follow)
        inner = inner.parent
    module = scope
    while module.parent is not None:
        module = module.parent
    return any(_binds(a, name) for a in module.assignments)


def _binds(a: Assignment, name: str) -> bool:
    return any(name in bound_paths(t) for t in a.targets)


def reaching_value(file_model: FileModel, scope: Scope, path: str, order: int) -> Optional[Tuple[Assignment, Optional[cst.BaseExpression]]]:
    """``(assignment, value)`` of the last binding of ``path`` in ``scope`` before ``order``.

    ``value`` is the matching element for ``a, b = x, y``; the whole value when
    a tuple target unpacks something else. None when ``path`` is not bound in
    ``scope`` before ``order`` (a parameter, a global, state set elsewhere).
    """
    # indexed on the first question: rules ask it thousands of times a file
    found = file_model.derived(_bindings_by_path, scope).get(path)
    if found is None:
        return None
    at = bisect_left(found[0], order)
    return found[1][at - 1] if at else None


def _bindings_by_path(file_model: FileModel, scope: Scope) -> Dict[str, Tuple[List[int], List[Tuple[Assignment, Optional[cst.BaseExpression]]]]]:
    """For each path ``scope`` binds (not by ``del`` or ``+=``): the orders of its bindings
    and ``(assignment, value)`` of each, in source order; the model records assignments in
    the order it numbers them, so each list is sorted."""
    index: Dict[str, Tuple[List[int], List[Tuple[Assignment, Optional[cst.BaseExpression]]]]] = {}
    for a in scope.assignments:
        if a.kind == "del" or a.kind == "aug":
            continue
        for target in a.targets:
            for path, value in _each_binding(target, a.value):
                orders, bindings = index.setdefault(path, ([], []))
                orders.append(a.order)
                bindings.append((a, value))
    return index


def _each_binding(target: cst.BaseExpression,
                  value: Optional[cst.BaseExpression]) -> Iterator[Tuple[str, Optional[cst.BaseExpression]]]:
    """Each path ``target`` binds, with the value it gets: the matching element for
    ``a, b = x, y``, the whole value when a tuple target unpacks something else."""
    if type(target) is not cst.Tuple and type(target) is not cst.List:  # not ``isinstance``: see ``expr.dotted``
        path = dotted(target)
        if path is not None:
            yield path, value
        return
    pairs = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
    seen: Set[str] = set()
    for i, el in enumerate(target.elements):
        for path in bound_paths(el.value):
            if path in seen:
                continue  # the first element that binds it gives its value
            seen.add(path)
            if pairs is not None and len(pairs) == len(target.elements) and dotted(el.value) == path:
                yield path, pairs[i].value
            else:
                yield path, value


def loop_members(file_model: FileModel, scope: Scope, path: str, order: int) -> Optional[Tuple[int, List[cst.BaseExpression]]]:
    """``(loop order, [w, b])`` when ``path`` at ``order`` is the variable of a loop over a
    literal tuple or list of names that ``order`` stands inside: ``p`` in ``for p in (w, b):``
    is each of ``w`` and ``b`` in turn, so what holds for all of them holds for ``p``, and a
    write to ``p`` writes to every one. None for any other binding, after the loop (``p`` is
    then only the last one), or when an element is not a plain name or attribute."""
    reaching = reaching_value(file_model, scope, path, order)
    if reaching is None or reaching[0].kind != "for":
        return None
    binding = reaching[0]
    loop_node = binding.node
    if not isinstance(loop_node, cst.For) or dotted(loop_node.target) != path:
        return None  # ``for i, p in enumerate(...)``: not one element per name
    iterated = loop_node.iter
    if not isinstance(iterated, (cst.Tuple, cst.List)) or not iterated.elements:
        return None
    members = [el.value for el in iterated.elements]
    if any(isinstance(el, cst.StarredElement) for el in iterated.elements) or any(dotted(m) is None for m in members):
        return None
    if not any(loop.node is loop_node and loop.contains(order) for loop in scope.loops):
        return None
    return binding.order, members


# The tail methods ``method_chain`` looks through; any other call is the chain's base.
_CHAIN_METHODS = SHAPE_METHODS | GRAPH_CUT_METHODS


def method_chain(expr: Optional[cst.BaseExpression]) -> Tuple[Optional[cst.BaseExpression], List[str]]:
    """``(base, [methods...])``: ``model(x).mean().cpu()`` -> (``model(x)``, ['mean', 'cpu'])."""
    methods: List[str] = []
    while True:
        if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
                and expr.func.attr.value in _CHAIN_METHODS):
            methods.append(expr.func.attr.value)
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in FRESH_METHODS:
            methods.append(expr.attr.value)
            expr = expr.value
        else:
            return expr, methods[::-1]


def is_leaf_factory(file_model: FileModel, expr: Optional[cst.BaseExpression]) -> bool:
    """``torch.zeros(...)``, ``torch.tensor(v).to(device)``, ``Variable(x)``, ``nn.Parameter(w)``."""
    base, methods = method_chain(expr)
    if not isinstance(base, cst.Call) and not methods:
        return False
    if isinstance(base, cst.Call):
        callee = dotted(base.func) or ""
        last = callee.rsplit(".", 1)[-1]
        if last in LEAF_WRAPPERS:
            return True
        qualified = file_model.names.qualify(callee)
        if qualified is not None and last in TENSOR_FACTORIES:
            return True
    return False


def produced_by_graph_call(file_model: FileModel, expr: Optional[cst.BaseExpression]) -> bool:
    """Is ``expr`` a forward pass or a loss call, maybe reduced or moved (``model(x).mean()``)?"""
    base, methods = method_chain(expr)
    if not isinstance(base, cst.Call) or any(m not in SHAPE_METHODS for m in methods):
        return False
    if positional(base, 0) is None:
        return False  # ``resnet18(pretrained=True)`` builds a model; a forward pass takes an input
    call = file_model.call_of(base)
    return call is not None and (
        file_model.is_forward(call) or file_model.is_submodule_forward(call) or file_model.is_loss_call(call)
    )


def wants_its_gradient(file_model: FileModel, scope: Scope, path: str) -> bool:
    """The code uses ``path`` as a leaf it differentiates with respect to: it reads
    ``path.grad``, calls ``path.retain_grad()``/``register_hook``, or passes it as
    ``inputs`` to ``torch.autograd.grad`` (saliency maps, attacks, feature gradients)."""
    for call in scope.calls:
        if call.receiver == path and call.method in ("retain_grad", "register_hook"):
            return True
        if file_model.is_autograd_grad(call):
            inputs = keyword(call.node, "inputs") or positional(call.node, 1)
            if inputs is not None and path in set(referenced_paths(inputs)):
                return True
    return path + ".grad" in file_model.derived(_paths_read, scope)


def _paths_read(file_model: FileModel, scope: Scope) -> FrozenSet[str]:
    """Every dotted path, and each of its prefixes, that ``scope`` reads in a call's
    arguments, an assigned value or a returned one: asked once per scope, not once per
    name a rule wonders about (``x.grad`` is read where ``x.grad`` or ``x.grad.data`` is)."""
    values = [arg.value for call in scope.calls for arg in call.node.args]
    values += [a.value for a in scope.assignments if a.value is not None]
    values += [value for _, value in scope.returns]
    return frozenset(path for value in values for path in _all_paths(value))


def _all_paths(expr: cst.BaseExpression) -> Iterator[str]:
    """Every dotted path and its prefixes read in ``expr`` (``x.grad.data`` gives all three)."""
    for path in referenced_paths(expr):
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            yield ".".join(parts[:i])


def file_freezes(file_model: FileModel) -> bool:
    """Does the file turn off ``requires_grad`` anywhere (``p.requires_grad = False``,
    ``net.requires_grad_(False)``, ``set_requires_grad(net, False)``, ``freeze(...)``)?"""
    return file_model.derived(_file_freezes)


def _file_freezes(file_model: FileModel) -> bool:
    return any(_freeze_call(c) for c in file_model.calls) or any(
        a.kind == "assign" and literal_false(a.value)
        and any(isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" for t in a.targets)
        for a in file_model.assignments
    )


def literal_false(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _freeze_call(call: CallSite) -> bool:
    method = (call.method or "").lower()
    if "freeze" in method and "unfreeze" not in method:
        return True
    if "requires_grad" in method or "toggle_grad" in method:
        return any(literal_false(arg.value) for arg in call.node.args)
    return False


def freezes(file_model: FileModel) -> list:
    """``(scope, order, path)`` for every place that may turn ``requires_grad`` off:
    ``p.requires_grad = False`` (or any value but a literal True),
    ``emb.requires_grad_(False)``, ``set_requires_grad(net, False)``, ``freeze(model)``.
    ``path`` is what is frozen (a receiver or an argument), None when it cannot be read."""
    return file_model.derived(_freezes)


def _freezes(file_model: FileModel) -> list:
    out: List[Tuple[Scope, int, Optional[str]]] = []
    for call in file_model.calls:
        if _freeze_call(call):
            paths: List[Optional[str]] = [call.receiver] if call.receiver else []
            paths += [p for p in (dotted(arg.value) for arg in call.node.args) if p]
            out.extend((call.scope, call.order, p) for path in (paths or [None])
                       for p in _frozen_with(file_model, call.scope, path, call.order))
    for a in file_model.assignments:
        if a.kind == "assign" and not _literal_true(a.value):
            for t in a.targets:
                if isinstance(t, cst.Attribute) and t.attr.value == "requires_grad":
                    out.extend((a.site.scope, a.order, p) for p in _frozen_with(file_model, a.site.scope, dotted(t.value), a.order))
    return out


def _frozen_with(file_model: FileModel, scope: Scope, path: Optional[str], order: int) -> List[Optional[str]]:
    """What a freeze of ``path`` turns off: ``_standing_for``'s names and, for the variable of
    ``for p in net.parameters(): p.requires_grad = False``, the module it ranges over (a
    partial freeze, ``if "fc" not in name``, counts as a whole one: that only silences)."""
    owners = iterated_owners(file_model, scope, path, order) if path is not None and "." not in path else []
    return _standing_for(file_model, scope, path, order) + list(owners)


def iterated_owners(file_model: FileModel, scope: Scope, name: str, order: int) -> List[str]:
    """The paths a loop variable's iterable reads, when ``name`` at ``order`` is one: ``net``
    and ``net.fc`` for ``p`` of ``for p in net.fc.parameters()`` (each path and what it is an
    attribute of, less the iterator methods), ``ema`` and ``model`` for ``for e, p in
    zip(ema.parameters(), model.parameters())``. Empty for any other binding."""
    reaching = reaching_value(file_model, scope, name, order)
    if reaching is None or reaching[0].kind != "for" or reaching[1] is None:  # a For's iter
        return []
    read = list(referenced_paths(reaching[1]))
    owners = [p for p in read if not p.endswith(("parameters", "named_parameters"))]
    return owners + [p.rsplit(".", 1)[0] for p in read if "." in p]


def _standing_for(file_model: FileModel, scope: Scope, path: Optional[str], order: int) -> List[Optional[str]]:
    """``path`` and, for the variable of ``for p in (w, b)``, the names it stands for."""
    found = loop_members(file_model, scope, path, order) if path is not None else None
    return [path] + ([dotted(m) for m in found[1]] if found is not None else [])


def grad_switched_on(file_model: FileModel, scope: Scope) -> List[Tuple[str, int]]:
    """``(path, order)`` for every ``x.requires_grad = True`` in ``scope`` (each of ``w`` and
    ``b`` for ``for p in (w, b): p.requires_grad = True``). Torch refuses to set the flag on a
    computed tensor, so once the line has run ``x`` is a leaf that requires grad."""
    out: List[Tuple[str, int]] = []
    for a in scope.assignments:
        if a.kind != "assign" or not _literal_true(a.value):
            continue
        for t in a.targets:
            if isinstance(t, cst.Attribute) and t.attr.value == "requires_grad":
                out.extend((p, a.order) for p in _standing_for(file_model, scope, dotted(t.value), a.order) if p is not None)
    return out


def frozen_for(file_model: FileModel, scope: Scope, order: int, paths: List[str]) -> bool:
    """Might ``requires_grad`` be off for what ``paths`` name (a tensor and the modules it
    belongs to) at ``order`` in ``scope``? A freeze of any of them, of a module holding
    them or of a part of them counts, wherever it is, except one later in the same
    function: that one comes too late for the write before it."""
    paths = [p for p in paths if p]
    for where, at, frozen in freezes(file_model):
        if where is scope and at > order:
            continue
        if frozen is None or any(_related(frozen, p) for p in paths):
            return True
    return False


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _literal_true(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
