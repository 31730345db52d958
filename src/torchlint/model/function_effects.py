"""What a function does with the values it is handed and what it hands back, told from the
model of its own module.

One definition wherever the function is: a call of another module's function asks these of
that module's model (``ProjectFunction.ask``), which a lint of that module builds the same
way, and ``returns_plain`` and ``rewalked`` answer for the file's own functions too (the
calls of which the model otherwise follows into their bodies: ``reach.py``).
The project index's ``ast`` summary (``function_summaries``) only says which functions could
have an effect (``calls_a_parameter``, ``may_return_loss``, ``may_rewalk``,
``may_write_in_place``): a module is parsed with libcst only when a call may need its answer.

Each fact is ``fact(file_model, scope)`` and is asked through ``file_model.derived`` (memoised
per model, as every derived analysis is).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, identifiers, keyword, literal_bool, name_uses, positional
from torchlint.model.grad import GradMode
from torchlint.model.grad_modes import set_here
from torchlint.model.modes import mode_switch
from torchlint.model.vocab import (
    GRADIENT_CLIPS, KILL_ATTRS, KILL_METHODS, NUMBER_READ_METHODS, PLAIN_BUILTINS, PROPAGATE_BUILTINS, calls_a_loss,
    called_module, is_eval_function_name, last_name, unwrapped_module, writes_in_place as is_in_place_method,
)
from torchlint.model.tree import COMPREHENSIONS
from torchlint.model.walk import children

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Scope, Site

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


def positional_params(file_model: FileModel, scope: Scope) -> Tuple[str, ...]:
    """The positional parameters a call's arguments bind to, as a fact of the model (``ProjectFunction.ask``)."""
    return positional_and_keyword_params(scope)[0]


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
    """What each in-place write of the scope changes, with the grad mode its function sets there
    (``grad_modes.set_here``), else the function's decorator."""
    for call in scope.calls:
        func = call.node.func
        if isinstance(func, cst.Attribute) and is_in_place_method(func.attr.value):
            yield func.value, set_here(call.site) or scope.decorator_grad
    for a in scope.assignments:
        if a.kind == "aug" or (a.kind == "assign" and any(isinstance(t, cst.Subscript) for t in a.targets)):
            yield a.targets[0], set_here(a.site) or scope.decorator_grad


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
    if isinstance(node, (cst.CompFor, cst.NamedExpr)):
        yield from (n for n in bound_paths(node.target) if "." not in n)
    elif isinstance(node, cst.ExceptHandler) and node.name is not None:
        yield from (n for n in bound_paths(node.name.name) if "." not in n)
    elif isinstance(node, cst.Nonlocal):
        yield from (item.name.value for item in node.names)
    elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
        for alias in node.names:
            yield (dotted(alias.asname.name if alias.asname else alias.name) or "").split(".")[0]
    elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        yield node.name.value


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
    """The statements of the function's body (``_statements``)."""
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
    given = positional(node, 0) or keyword(node, "parameters")
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
        if isinstance(node, COMPREHENSIONS) and _is_name(node.for_in.iter, name):
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


# -- plain returns ---------------------------------------------------------------------
_PLAIN_NAMES = frozenset(("None", "True", "False"))


def returns_plain(file_model: FileModel, scope: Scope) -> bool:
    """Does every ``return`` of ``scope`` hand back Python values (``loss.item()``,
    ``float(loss)``, ``acc.tolist()``, numbers, containers of them)?"""
    values = [value for _, value in scope.returns]
    return bool(values) and all(_plain(value, scope, set()) for value in values)


def _plain(expr: Optional[cst.BaseExpression], scope: Scope, seen: set) -> bool:
    t = type(expr)
    e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
    if t in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.FormattedString):
        return True
    if t is cst.Name:
        return e.value in _PLAIN_NAMES or _plain_local(e.value, scope, seen)
    if t is cst.Call:
        func = e.func
        if isinstance(func, cst.Attribute):
            return func.attr.value in NUMBER_READ_METHODS
        return dotted(func) in PLAIN_BUILTINS
    if t in (cst.Tuple, cst.List, cst.Set):
        return all(_plain(el.value, scope, seen) for el in e.elements)
    if t is cst.Dict:
        return all(isinstance(el, cst.DictElement) and _plain(el.value, scope, seen) for el in e.elements)
    if t is cst.BinaryOperation:
        return _plain(e.left, scope, seen) and _plain(e.right, scope, seen)
    if t is cst.UnaryOperation:
        return _plain(e.expression, scope, seen)
    return False


def _plain_local(name: str, scope: Scope, seen: set) -> bool:
    """A local name every binding of which is a plain value (``value = loss.item()``)."""
    if name in seen:
        return True  # ``total = total + x``: the other bindings decide
    seen.add(name)
    bindings = [a for a in scope.assignments if name in (p for t in a.targets for p in bound_paths(t))]
    if not bindings or name in scope.params:
        return False
    for a in bindings:
        simple = len(a.targets) == 1 and dotted(a.targets[0]) == name
        if a.kind not in ("assign", "aug") or not simple or not _plain(a.value, scope, seen):
            return False
    return True


# -- seeding -------------------------------------------------------------------------------
# A seed, determinism, or a cryptographically secure generator (differential privacy's noise must
# not be reproducible: opacus' ``secure_mode``, ``torchcsprng``): randomness decided on, either way.
_DETERMINISM_WORDS = ("seed", "deterministic_algorithms", "secure_rng", "secure_mode", "csprng")
_SEED_COMMENT = re.compile(r"#[^\n]*seed", re.IGNORECASE)


def code_mentions_seeding(node: cst.CSTNode, code: str) -> bool:
    """Does the code of ``node`` (its text ``code``) decide on its random numbers: a name that
    mentions a seed or determinism (``manual_seed``, ``args.seed``, ``use_deterministic_algorithms``),
    or a comment that mentions a seed (a seed commented out is a choice made, not one forgotten)?"""
    if any(any(word in name.lower() for word in _DETERMINISM_WORDS) for name in identifiers(node)):
        return True
    return _SEED_COMMENT.search(code) is not None  # a '#' in a string may match too: then silent


def seeds(file_model: FileModel, scope: Scope) -> bool:
    """The function's code decides on its random numbers as a program's does (``code_mentions_seeding``)."""
    node = scope.node
    return code_mentions_seeding(node, file_model.module.code_for_node(node))


# -- what it does with its parameters and what it returns ------------------------------
GRAPH = "<loss>"  # the label of a torch loss computed with grad on (no parameter has this name)


@dataclass(frozen=True)
class FunctionEffects:
    """What a function does, in terms of its parameters: what a call of it runs and hands back."""

    params: Tuple[str, ...]  # positional parameters, in order (a call's arguments bind to them)
    forwards: frozenset  # parameters it calls (``model(x)``, ``model.forward(x)``) with grad on
    forward_in_loop: bool  # a forward of a parameter runs in a loop of its own (over batches)
    evaluates_itself: bool  # its own module reports its forwards (eval mode, evaluation loop)
    needs_grad: bool  # backward, autograd.grad, an optimizer step, requires_grad: not evaluation
    steps: bool  # steps an optimizer
    returns_loss: bool  # it returns a torch loss computed with grad on
    returned_outputs: frozenset  # parameters whose call's output it returns (a model output)
    # For a function that always returns a tuple of one length: the labels of each element
    # (a parameter's name: that parameter's output; ``GRAPH``: a torch loss), else None.
    returned_elements: Optional[Tuple[frozenset, ...]]
    retained_backward: bool  # its last backward is ``backward(retain_graph=True)``, outside loops
    # The parameters whose graph that last retained backward differentiates when the caller
    # hands it in (``def step(loss, opt): loss.backward(retain_graph=True)``): read at the call.
    retained_params: frozenset


def effects(file_model: FileModel, scope: Scope) -> FunctionEffects:
    """One function's effects: one pass over its calls, assignments and returns (its own code,
    not a nested function's or lambda's; no flow order beyond "assigned from", no types).
    Where it cannot tell, it says nothing, and the call site is judged as without it."""
    params, names = positional_and_keyword_params(scope)
    calls = _CallEffects(file_model, scope, names)
    for call in _own_calls(file_model, scope):
        calls.add(call)
    if any(a.kind in ("assign", "aug") and any(isinstance(t, cst.Attribute) and t.attr.value == "requires_grad"
                                               for t in a.targets) for a in scope.assignments):
        calls.needs_grad = True
    assignments = [(a.targets, a.value, _off(scope, a.site)) for a in scope.assignments
                   if a.kind in ("assign", "aug") and a.value is not None]
    labels = _Labels(file_model, names, assignments)
    live = [value for site, value in scope.returns if not _off(scope, site)]
    returned = labels.all_of(live)
    retained = _retained_last(calls.backwards, names, assignments)
    return FunctionEffects(
        params=params,
        forwards=frozenset(calls.forwards),
        forward_in_loop=calls.forward_in_loop,
        evaluates_itself=bool(calls.forwards & calls.switched_to_eval) or (
            is_eval_function_name(scope.name) and calls.forward_in_loop),
        needs_grad=calls.needs_grad,
        steps=calls.steps,
        returns_loss=GRAPH in returned,
        returned_outputs=frozenset(returned - {GRAPH}),
        returned_elements=labels.of_elements(live),
        retained_backward=bool(retained) and not retained & names,
        retained_params=frozenset(retained & names),
    )


def _off(scope: Scope, site: Site) -> bool:
    """Grad recording off where ``site`` stands, whoever calls the function: what its own code
    sets there (``grad_modes.set_here``), else its decorator."""
    return (set_here(site) or scope.decorator_grad) is GradMode.NO_GRAD


def _own_calls(file_model: FileModel, scope: Scope) -> Iterator[CallSite]:
    """The scope's calls outside the lambdas in it (a lambda is not run where it stands)."""
    for call in scope.calls:
        parent = file_model.parents.get(id(call.node))
        while parent is not None and not isinstance(parent, (cst.Lambda, cst.FunctionDef)):
            parent = file_model.parents.get(id(parent))
        if not isinstance(parent, cst.Lambda):
            yield call


class _CallEffects:
    """What the calls of one function do, in one walk over them, read with the model's own
    definitions (``training_calls``: a backward, a gradient, a step; ``modes``: a switch)."""

    def __init__(self, file_model: FileModel, scope: Scope, names: frozenset) -> None:
        self.file_model, self.scope, self.names = file_model, scope, names
        self.forwards: Set[str] = set()
        self.switched_to_eval: Set[Optional[str]] = set()
        self.forward_in_loop = self.needs_grad = self.steps = False
        self.backwards: List[Tuple[CallSite, bool]] = []  # (call, in a loop)

    def add(self, call: CallSite) -> None:
        model = self.file_model
        param = _called_param(call.callee or "", self.names)
        in_loop = call.site.loop is not None
        if param is not None and not _off(self.scope, call.site):
            self.forwards.add(param)
            self.forward_in_loop |= in_loop
        if model.is_differentiation(call):
            self.backwards.append((call, in_loop))
        # Gradients wanted: computed, or a step, or recording turned on (not evaluation code).
        if model.computes_gradients(call) or call.method == "step" or (
                call.method == "set_grad_enabled" and not _false(positional(call.node, 0))):
            self.needs_grad = True
        if model.stepped_optimizer(call) is not None:
            self.steps = True
        switch, func = mode_switch(call), call.node.func
        receiver = _receiver_param(func.value) if switch is not None and isinstance(func, cst.Attribute) else None
        if switch is not None and receiver in self.names:
            if switch.to_eval is True:
                self.switched_to_eval.add(receiver)
            else:
                self.needs_grad = True  # it puts a model into training mode (or may): it trains


def _false(node: Optional[cst.BaseExpression]) -> bool:
    return node is not None and literal_bool(node) is False


def _receiver_param(node: cst.BaseExpression) -> Optional[str]:
    """``model`` of ``model``, ``model.module``: the parameter a receiver starts from."""
    path = dotted(node)
    if path is None:
        return None
    path = unwrapped_module(path)
    return path if "." not in path else None


def _called_param(path: str, names: frozenset) -> Optional[str]:
    """``model`` for ``model(x)``, ``model.forward(x)``, ``model.module(x)``: a forward of a parameter."""
    path = called_module(path)
    return path if path in names else None


_Assigned = Tuple[tuple, cst.BaseExpression, bool]  # (targets, value, grad off)


class _Labels:
    """What each local name and expression of one function may carry, as labels: the output of
    a parameter's forward (the parameter's name), or a torch loss (``GRAPH``). A call is what the
    file's imports make its callee (``torch.cat``, ``F.relu``: torch's, which hand on their
    arguments' graphs), as everywhere in the model."""

    def __init__(self, file_model: FileModel, params: frozenset, assignments: List[_Assigned]) -> None:
        self.names, self.params = file_model.names, params
        self.of_name: Dict[str, Set[str]] = {}
        for _ in range(3):  # replayed until nothing changes (loops feed back)
            changed = False
            for targets, value, off in assignments:
                found = set() if off else self.of(value)
                if not found:
                    continue
                for name in (n for target in targets for n in bound_paths(target) if "." not in n):
                    if not found <= self.of_name.setdefault(name, set()):
                        self.of_name[name] |= found
                        changed = True
            if not changed:
                break

    def of(self, node: cst.BaseExpression) -> Set[str]:
        """The graphs ``node`` may carry."""
        if isinstance(node, cst.Name):
            return self.of_name.get(node.value, set())
        if isinstance(node, cst.Attribute):
            return set() if node.attr.value in KILL_ATTRS else self.of(node.value)
        if isinstance(node, cst.Subscript):
            return self.of(node.value)
        if isinstance(node, cst.BinaryOperation):
            return self.of(node.left) | self.of(node.right)
        if isinstance(node, cst.UnaryOperation):
            return set() if isinstance(node.operator, cst.Not) else self.of(node.expression)
        if isinstance(node, cst.IfExp):
            return self.of(node.body) | self.of(node.orelse)
        if isinstance(node, (cst.Tuple, cst.List)):
            return self.all_of(e.value for e in node.elements if isinstance(e, cst.Element))
        if isinstance(node, cst.Call):
            return self._of_call(node)
        return set()

    def all_of(self, nodes: Iterable[cst.BaseExpression]) -> Set[str]:
        out: Set[str] = set()
        for node in nodes:
            out |= self.of(node)
        return out

    def _of_call(self, call: cst.Call) -> Set[str]:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in KILL_METHODS:
            return set()
        path = dotted(func) or ""
        param = _called_param(path, self.params) if path else None
        if param is not None:
            return {param}
        if calls_a_loss(path):
            return {GRAPH}  # F.cross_entropy(...), criterion(...), loss_fn(...)
        torch_function = (self.names.qualify(path) or "").startswith("torch.") if path else False
        if isinstance(func, cst.Attribute) and not torch_function:
            return self.of(func.value)  # out.mean(), (a - b).pow(2).sum()
        if torch_function or path in PROPAGATE_BUILTINS:
            return self.all_of(a.value for a in call.args if a.keyword is None and not a.star)
        return set()  # an unknown function: assumed to end the graph, as the per-file taint does

    def of_elements(self, live: List[cst.BaseExpression]) -> Optional[Tuple[frozenset, ...]]:
        """For a function whose every return hands back a tuple of one length: each element's labels."""
        tuples = [v for v in live if isinstance(v, cst.Tuple)]
        if not live or len(tuples) != len(live) or len({len(v.elements) for v in tuples}) != 1:
            return None
        return tuple(frozenset(self.all_of(v.elements[i].value for v in tuples if isinstance(v.elements[i], cst.Element)))
                     for i in range(len(tuples[0].elements)))


def _retained_last(backwards: List[Tuple[CallSite, bool]], params: frozenset,
                   assignments: List[_Assigned]) -> Set[str]:
    """The names the function's last backward starts from, when it keeps its graph
    (``retain_graph=True``, no ``create_graph``), runs once per call (outside the function's
    own loops) and differentiates a graph the function built itself or its caller handed in
    (a parameter: the caller may share that graph, which the call site tells); else empty."""
    if not backwards:
        return set()
    call, in_loop = backwards[-1]
    func = call.node.func
    if in_loop or not isinstance(func, cst.Attribute) or func.attr.value != "backward":
        return set()
    retain = keyword(call.node, "retain_graph")
    if literal_bool(retain) is not True or not isinstance(retain, cst.Name):
        return set()
    create = keyword(call.node, "create_graph")
    if create is not None and not _false(create):
        return set()
    roots = {read.value for read in name_uses(func.value, None)[0]}
    local = {n for targets, _v, _off in assignments for t in targets for n in bound_paths(t) if "." not in n}
    return roots if roots <= local | params else set()
