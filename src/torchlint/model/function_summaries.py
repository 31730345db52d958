"""What a top-level function of a project module does, told from its stdlib ``ast`` once.

``from .metrics import measure`` hides a forward pass, a loss or a retained backward
in another module of the project. The project index (``model/project.py``) keeps one
summary per function of each module it reads, and the file that calls the function
applies it at the call (``model/project_calls.py``), reporting there: a file's findings
then depend on it and the modules it imports, nothing else.

Cheap on purpose: one walk over each function's own nodes (not into nested
functions), no flow order beyond "assigned from", no types. Where a summary cannot
tell, it says nothing, and the call site is judged as before.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from torchlint.model.ast_reading import assigned_names, assignment_targets, ast_dotted, in_place_write, written_by
from torchlint.model.vocab import (
    GRADIENT_CLIPS, LOSS_FUNCTIONS, NUMBER_READ_METHODS, PLAIN_BUILTINS, is_eval_function_name, is_loss_name, is_optimizer_name, last_name,
)

_GRAD_OFF = frozenset(("no_grad", "inference_mode"))
# What wants gradients: a function doing any of this computes them, not an evaluation.
_GRADIENT_METHODS = frozenset(("backward", "manual_backward", "requires_grad_", "retain_grad", "register_hook",
                               "enable_grad", "step"))
# Methods whose result carries no graph (the ``.item()`` of a loss, a prediction's indices).
_CUTS = frozenset("item tolist numpy detach argmax argmin long int bool size dim numel".split())
_CUT_ATTRIBUTES = frozenset("data grad shape dtype device ndim".split())
# Calls that hand on the graph of their arguments (``torch.cat(outs)``, ``sum(losses)``).
_PROPAGATING_BUILTINS = frozenset("sum max min abs".split())
_TORCH_ROOTS = frozenset(("torch", "F", "nn"))
_GRAPH = "<loss>"  # the label of a torch loss computed with grad on (no parameter has this name)


@dataclass(frozen=True)
class FunctionSummary:
    """One function's effects, in terms of its parameters."""

    params: Tuple[str, ...]  # positional parameters, in order
    forwards: frozenset  # parameters it calls (``model(x)``, ``model.forward(x)``) with grad on
    returns_loss: bool  # it returns a torch loss computed with grad on
    returned_outputs: frozenset  # parameters whose call's output it returns (a model output)
    returns_plain: bool  # every return hands back Python values (``loss.item()``, ``float(x)``)
    # For a function that always returns a tuple of one length: the labels of each element
    # (a parameter's name: that parameter's output; ``_GRAPH``: a torch loss), else None.
    returned_elements: Optional[Tuple[frozenset, ...]]
    needs_grad: bool  # backward, autograd.grad, an optimizer step, requires_grad: not evaluation
    evaluates_itself: bool  # its own module reports its forwards (eval mode, evaluation loop)
    forward_in_loop: bool  # a forward of a parameter runs in a loop of its own (over batches)
    retained_backward: bool  # its last backward is ``backward(retain_graph=True)``, outside loops
    steps: bool  # steps an optimizer
    seeds: bool = False  # seeds random numbers (``torch.manual_seed``, ``set_seed``, ...)
    # The parameters whose graph that last retained backward differentiates when the caller
    # hands it in (``def step(loss, opt): loss.backward(retain_graph=True)``): read at the call.
    retained_params: frozenset = frozenset()
    # Admissions, not facts: the syntax a fact of ``function_effects`` needs to see, so that the
    # module's libcst model is built only for a call that may need the answer.
    # It changes gradients (a clip, a ``.grad`` write) and has parameters: ``rewalked`` may say some.
    may_rewalk: bool = False
    # It writes one of its parameters in place (``t.add_(1)``, ``t -= g``, ``t[0] = 0``) outside
    # ``no_grad``, whatever binds the name later: ``written_in_place`` may say some.
    may_write_in_place: bool = False

    def argument_for(self, call_args: list, param: str) -> Optional[int]:
        """Index into ``call_args`` ((keyword or None) list) of the argument bound to ``param``."""
        for i, keyword in enumerate(call_args):
            if keyword == param:
                return i
        try:
            position = self.params.index(param)
        except ValueError:
            return None
        positional = [i for i, keyword in enumerate(call_args) if keyword is None]
        return positional[position] if position < len(positional) else None


def summarize_functions(tree: ast.Module) -> Dict[str, FunctionSummary]:
    return {node.name: summarize_function(node) for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def summarize_function(func: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> FunctionSummary:
    params = tuple(a.arg for a in (*func.args.posonlyargs, *func.args.args))
    names = set(params) | {a.arg for a in func.args.kwonlyargs}
    grad_free = any(_grad_off(d) for d in func.decorator_list)
    facts = _Facts()
    for node, off, in_loop in _own_nodes(func.body, grad_free, False):
        facts.add_write(node, names, off)
        if isinstance(node, ast.Call):
            facts.add_call(node, names, off, in_loop)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = assignment_targets(node)
            facts.assignments.append((targets, node.value, off, isinstance(node, ast.AugAssign)))
            if any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in targets):
                facts.needs_grad = True
        elif isinstance(node, ast.Return) and node.value is not None:
            facts.returns.append((node.value, off))
    labels = _labels_of_names(facts.assignments, names)
    retained = _retained_last(facts.backwards, names, facts.assignments)
    returned = set()
    for value, off in facts.returns:
        if not off:
            returned |= _labels(value, labels, names)
    looped = is_eval_function_name(func.name) and facts.forward_in_loop
    live = [value for value, off in facts.returns if not off]
    elements = None
    tuples = [v for v in live if isinstance(v, ast.Tuple)]
    if live and len(tuples) == len(live) and len({len(v.elts) for v in tuples}) == 1:
        elements = tuple(frozenset().union(*(_labels(v.elts[i], labels, names) for v in tuples))
                         for i in range(len(tuples[0].elts)))
    return FunctionSummary(
        params=params,
        forwards=frozenset(facts.forwards),
        returns_loss=_GRAPH in returned,
        returned_outputs=frozenset(returned - {_GRAPH}),
        returns_plain=bool(facts.returns) and all(_plain(v, facts.assignments, set()) for v, _ in facts.returns),
        returned_elements=elements,
        needs_grad=facts.needs_grad,
        evaluates_itself=bool(facts.forwards & facts.switched_to_eval) or looped,
        forward_in_loop=facts.forward_in_loop,
        retained_backward=bool(retained) and not retained & names,
        steps=facts.steps,
        seeds=facts.seeds,
        retained_params=frozenset(retained & names),
        may_rewalk=may_rewalk(func),
        may_write_in_place=bool(facts.written),
    )


class _Facts:
    """What the walk over one function collects."""

    def __init__(self) -> None:
        self.forwards: Set[str] = set()
        self.switched_to_eval: Set[Optional[str]] = set()
        self.forward_in_loop = self.needs_grad = self.steps = self.seeds = False
        self.backwards: List[Tuple[ast.Call, bool]] = []  # (call, in a loop)
        # (targets, value, grad off, augmented)
        self.assignments: List[Tuple[Sequence[ast.expr], ast.expr, bool, bool]] = []
        self.returns: List[Tuple[ast.expr, bool]] = []  # (value, grad off)
        self.written: Set[str] = set()  # parameters written in place outside ``no_grad``

    def add_write(self, node: ast.AST, names: set, off: bool) -> None:
        if in_place_write(node):
            target = written_by(node)
            while isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Name) and target.id in names and not off:
                self.written.add(target.id)

    def add_call(self, node: ast.Call, names: set, off: bool, in_loop: bool) -> None:
        called = last_name(ast_dotted(node.func) or "").lower()
        if "seed" in called or called == "use_deterministic_algorithms":
            self.seeds = True  # the same words ``seeding.mentions_seeding`` reads in the caller's own file
        param = _called_param(node, names)
        if param is not None and not off:
            self.forwards.add(param)
            self.forward_in_loop |= in_loop
        if not isinstance(node.func, ast.Attribute):
            if (ast_dotted(node.func) or "").endswith("autograd.grad"):
                self.needs_grad = True
                self.backwards.append((node, in_loop))
            return
        method = node.func.attr
        if method in ("eval", "train") and _receiver_param(node.func.value) in names:
            if method == "eval" or (node.args and _false(node.args[0])):
                self.switched_to_eval.add(_receiver_param(node.func.value))
            else:
                self.needs_grad = True  # it puts a model into training mode: it trains
        if method in _GRADIENT_METHODS or (ast_dotted(node.func) or "").endswith("autograd.grad") or (
                method == "set_grad_enabled" and not (node.args and _false(node.args[0]))):
            self.needs_grad = True
        if method == "step" and is_optimizer_name(last_name(ast_dotted(node.func.value) or "")):
            self.steps = True
        if method in ("backward", "manual_backward") or (ast_dotted(node.func) or "").endswith("autograd.grad"):
            self.backwards.append((node, in_loop))


def _own_nodes(body: list, off: bool, in_loop: bool) -> Iterator[Tuple[ast.AST, bool, bool]]:
    """(node, grad off, in a loop) for every node of the function's own code, in source order;
    ``with torch.no_grad():`` turns grad off for its body."""
    for node in body:
        yield from _node_and_children(node, off, in_loop)


def _node_and_children(node: ast.AST, off: bool, in_loop: bool) -> Iterator[Tuple[ast.AST, bool, bool]]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return
    yield node, off, in_loop
    if isinstance(node, (ast.With, ast.AsyncWith)):
        inner = off or any(_grad_off(item.context_expr) for item in node.items)
        for item in node.items:
            yield from _node_and_children(item.context_expr, off, in_loop)
        yield from _own_nodes(node.body, inner, in_loop)
        return
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        for child in (getattr(node, "iter", None), getattr(node, "test", None)):
            if child is not None:
                yield from _node_and_children(child, off, in_loop)
        yield from _own_nodes(node.body + node.orelse, off, True)
        return
    for child in ast.iter_child_nodes(node):
        yield from _node_and_children(child, off, in_loop)


def _grad_off(node: ast.AST) -> bool:
    """``torch.no_grad()``, ``@torch.inference_mode()``, ``set_grad_enabled(False)``."""
    call = node if isinstance(node, ast.Call) else None
    name = last_name(ast_dotted(call.func if call else node) or "")
    if name in _GRAD_OFF:
        return True
    return name == "set_grad_enabled" and call is not None and bool(call.args) and _false(call.args[0])


def _false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, 0)


def _receiver_param(node: ast.AST) -> Optional[str]:
    """``model`` of ``model``, ``model.module``: the parameter a receiver starts from."""
    path = ast_dotted(node)
    if path is None:
        return None
    while path.endswith(".module"):
        path = path.rsplit(".", 1)[0]
    return path if "." not in path else None


def _called_param(call: ast.Call, names: set) -> Optional[str]:
    """``model`` for ``model(x)``, ``model.forward(x)``, ``model.module(x)``: a forward of a parameter."""
    path = ast_dotted(call.func)
    if path is None:
        return None
    while path.endswith((".forward", ".module")):
        path = path.rsplit(".", 1)[0]
    return path if path in names else None


def _labels_of_names(assignments: list, params: set) -> Dict[str, set]:
    """What each local name may hold: the output of a parameter's forward (its name), or a
    torch loss (``_GRAPH``). Assignments are replayed until nothing changes (loops feed back)."""
    labels: Dict[str, set] = {}
    for _ in range(3):
        changed = False
        for targets, value, off, _aug in assignments:
            found = set() if off else _labels(value, labels, params)
            if not found:
                continue
            for target in targets:
                for name in assigned_names(target):
                    if not found <= labels.setdefault(name, set()):
                        labels[name] |= found
                        changed = True
        if not changed:
            break
    return labels


def _labels(node: ast.AST, labels: Dict[str, set], params: set) -> set:
    """The graphs ``node`` may carry, as labels (see ``_labels_of_names``)."""
    if isinstance(node, ast.Name):
        return labels.get(node.id, set())
    if isinstance(node, ast.Attribute):
        return set() if node.attr in _CUT_ATTRIBUTES else _labels(node.value, labels, params)
    if isinstance(node, ast.Subscript):
        return _labels(node.value, labels, params)
    if isinstance(node, ast.BinOp):
        return _labels(node.left, labels, params) | _labels(node.right, labels, params)
    if isinstance(node, ast.UnaryOp):
        return set() if isinstance(node.op, ast.Not) else _labels(node.operand, labels, params)
    if isinstance(node, ast.IfExp):
        return _labels(node.body, labels, params) | _labels(node.orelse, labels, params)
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_labels(e, labels, params) for e in node.elts))
    if isinstance(node, ast.Call):
        return _call_labels(node, labels, params)
    return set()


def _call_labels(call: ast.Call, labels: Dict[str, set], params: set) -> set:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in _CUTS:
        return set()
    param = _called_param(call, params)
    if param is not None:
        return {param}
    path = ast_dotted(func) or ""
    last = last_name(path)
    if last in LOSS_FUNCTIONS or (is_loss_name(last) and "." not in path and not last[:1].isupper()):
        return {_GRAPH}  # F.cross_entropy(...), criterion(...), loss_fn(...)
    if isinstance(func, ast.Attribute) and path.split(".", 1)[0] not in _TORCH_ROOTS:
        return _labels(func.value, labels, params)  # out.mean(), (a - b).pow(2).sum()
    if path.split(".", 1)[0] in _TORCH_ROOTS or path in _PROPAGATING_BUILTINS:
        return set().union(*(_labels(a, labels, params) for a in call.args)) if call.args else set()
    return set()  # an unknown function: assumed to end the graph, as the per-file taint does


def _plain(node: ast.AST, assignments: list, seen: set) -> bool:
    """A Python value: ``loss.item()``, ``float(x)``, a number, a tuple of them, a local name
    every binding of which is one."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        if node.id in seen:
            return True
        seen.add(node.id)
        bindings = [(t, v, aug) for targets, v, _off, aug in assignments for t in targets
                    if isinstance(t, ast.Name) and t.id == node.id]
        nested = any(node.id in set(assigned_names(t)) and not isinstance(t, ast.Name)
                     for targets, _v, _off, _aug in assignments for t in targets)
        return bool(bindings) and not nested and all(_plain(v, assignments, seen) for _t, v, _aug in bindings)
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute):
            return node.func.attr in NUMBER_READ_METHODS
        return isinstance(node.func, ast.Name) and node.func.id in PLAIN_BUILTINS
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain(e, assignments, seen) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(v is not None and _plain(v, assignments, seen) for v in node.values)
    if isinstance(node, ast.BinOp):
        return _plain(node.left, assignments, seen) and _plain(node.right, assignments, seen)
    if isinstance(node, ast.UnaryOp):
        return _plain(node.operand, assignments, seen)
    return False


def _retained_last(backwards: list, params: set, assignments: list) -> set:
    """The names the function's last backward starts from, when it keeps its graph
    (``retain_graph=True``, no ``create_graph``), runs once per call (outside the function's
    own loops) and differentiates a graph the function built itself or its caller handed in
    (a parameter: the caller may share that graph, which the call site tells); else empty."""
    if not backwards:
        return set()
    call, in_loop = backwards[-1]
    if in_loop or not isinstance(call.func, ast.Attribute) or call.func.attr != "backward":
        return set()
    keywords = {k.arg: k.value for k in call.keywords}
    retain, create = keywords.get("retain_graph"), keywords.get("create_graph")
    if not (isinstance(retain, ast.Constant) and retain.value is True):
        return set()
    if create is not None and not _false(create):
        return set()
    roots = {n.id for n in ast.walk(call.func.value) if isinstance(n, ast.Name)}
    local = {name for targets, _v, _off, _aug in assignments for t in targets for name in assigned_names(t)}
    return roots if roots <= local | params else set()


# -- parameters walked twice --------------------------------------------------
def may_rewalk(func: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    """Has parameters and changes gradients (a clip, a ``.grad`` write): the syntax
    ``function_effects.rewalked`` needs to find a parameter walked twice."""
    return bool(func.args.posonlyargs or func.args.args) and any(
        _clips(n) or _writes_grad(n) for n in ast.walk(func))


def _clips(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and last_name(ast_dotted(node.func) or "") in GRADIENT_CLIPS


def _writes_grad(node: ast.AST) -> bool:
    """``p.grad.mul_(c)``, ``p.grad.data.clamp_(-v, v)``, ``p.grad = ...``, ``p.grad.data *= c``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_") \
            and not node.func.attr.startswith("_"):
        return (ast_dotted(node.func.value) or "").endswith((".grad", ".grad.data"))
    targets: List[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign):
        targets = [node.target]
    return any((ast_dotted(t) or "").endswith((".grad", ".grad.data")) for t in targets)
