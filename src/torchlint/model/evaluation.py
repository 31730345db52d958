"""Evaluation code told by how it is used, not by its name.

Real projects evaluate in ``measure(net, batches)`` or ``topk_hits(...)``,
called after ``model.eval()``; or in one function that trains or evaluates
depending on a flag (``run_epoch(model, loader, train=False)``) or a phase
(``for phase in ("train", "val")``) and only guards the backward. Both run a
forward pass with autograd recording for nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Set

import libcst as cst

from torchlint.model import modes, vocab
from torchlint.model.expr import bound_paths, dotted, identifiers, literal_bool, name_uses
from torchlint.model.grad import GradMode
from torchlint.model.tree import ancestors
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import CallSite, Scope

_EVAL_WORDS = frozenset("val valid validation test eval evaluation dev holdout".split())


def evaluation_only(file_model: FileModel, scope: Scope) -> bool:
    """Every call of this function in the file comes from evaluation code with grad on,
    and the function itself computes no gradient: its forward passes record for nothing."""
    return file_model.derived(_evaluation_only, scope, while_computing=False)


def _evaluation_only(file_model: FileModel, scope: Scope) -> bool:
    callers = file_model.callers.get(scope)
    if not callers or scope.is_module or scope.name in vocab.FORWARD_METHODS:
        return False
    if any(file_model.needs_autograd(c) for c in file_model.reachable_calls(scope)):
        return False
    return all(_evaluates_at(file_model, call) for call in callers)


def _evaluates_at(file_model: FileModel, call: CallSite) -> bool:
    """Is this call made from evaluation code, with grad on?"""
    if file_model.grad_at(call.site) is not GradMode.GRAD:
        return False
    caller = call.scope
    if evaluation_only(file_model, caller) or _passes_eval_model(file_model, call):
        return True
    if _trains(file_model, caller):
        return False
    loop = call.site.loop
    while loop is not None:
        if loop.iter is not None and any(vocab.is_eval_loader_name(n) for n in identifiers(loop.iter)):
            return True
        loop = loop.parent
    return not caller.is_module and vocab.is_eval_function_name(caller.name)


def _trains(file_model: FileModel, scope: Scope) -> bool:
    return any(map(file_model.is_training_call, scope.calls))


def _passes_eval_model(file_model: FileModel, call: CallSite) -> bool:
    """A model argument whose last mode switch before the call, in the caller, is ``eval()``."""
    switches = [s for s in modes.mode_switches(file_model, call.scope.calls) if s.order < call.order]
    for arg in call.node.args:
        path = dotted(arg.value)
        if path is None:
            continue
        last = None
        for switch in switches:
            if modes.same_model(switch.receiver, path):
                last = switch
        if last is not None and last.to_eval is True:
            return True
    return False


# -- eval mode set by hand ----------------------------------------------
def training_flag_switches(scope: Scope) -> list:
    """``(order, receiver, is_eval)`` for each ``layer.training = False`` (or ``True``) in
    ``scope``: hand-written layers (and modules) put in eval mode by their flag, as
    ``eval()`` does. A flag that cannot be read counts as training (silence is cheaper)."""
    found = []
    for a in scope.assignments:
        if a.kind != "assign":
            continue
        for target in a.targets:
            if isinstance(target, cst.Attribute) and target.attr.value == "training":
                receiver = dotted(target.value)
                if receiver is not None and receiver != "self":
                    found.append((a.order, receiver, literal_bool(a.value) is False))
    return found


# -- parameters without a module ----------------------------------------
def raw_parameters(file_model: FileModel) -> frozenset:
    """Plain tensors the code trains by hand (makemore's ``C``, ``W1``, ``b1``): made with
    ``requires_grad=True``, wrapped in ``nn.Parameter``, or given ``requires_grad = True`` /
    ``requires_grad_()`` themselves or through a loop over a list that names them
    (``for p in [C, W1, b1]: p.requires_grad = True``). Math on them records a graph
    as a model's forward pass does."""
    return file_model.derived(_raw_parameters)


def _raw_parameters(file_model: FileModel) -> frozenset:
    found: Set[str] = set()
    for a in file_model.assignments:
        if a.kind != "assign" or a.value is None:
            continue
        if _makes_parameter(file_model, a.value):
            found.update(p for t in a.targets for p in (dotted(t),) if p)
        for target in a.targets:
            if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" \
                    and literal_bool(a.value) is True:
                found.update(_named_by(file_model, a.site.scope, target.value, a.order))
    for call in file_model.calls:
        if call.method == "requires_grad_" and isinstance(call.node.func, cst.Attribute) and (
                not call.node.args or literal_bool(call.node.args[0].value) is True):
            found.update(_named_by(file_model, call.scope, call.node.func.value, call.order))
    return frozenset(found)


def computes_with(file_model: FileModel, expr: cst.BaseExpression, params: FrozenSet[str]) -> bool:
    """Does ``expr`` compute with one of ``params``: ``C[ix]``, ``h @ W2 + b2``,
    ``torch.tanh(W)``? Reading ``W.shape``, ``W.grad`` or ``W.data`` is no computation."""
    found = []

    def enter(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Subscript):
            found.append(dotted(node.value) in params)
        elif isinstance(node, cst.BinaryOperation):
            found.append(dotted(node.left) in params or dotted(node.right) in params)
        elif isinstance(node, cst.Call) and (file_model.names.qualify(dotted(node.func) or "") or "").startswith("torch."):
            found.append(any(dotted(arg.value) in params for arg in node.args))

    walk(expr, enter, lambda n: None)
    return any(found)


def bound_locally(scope: Scope) -> set:
    """The names a function binds itself (its parameters and assignments): not the module's."""
    if scope.is_module:
        return set()
    return set(scope.params) | {p for a in scope.assignments for t in a.targets for p in bound_paths(t)}


def hand_written_forward(file_model: FileModel, call: CallSite) -> bool:
    """``net(x)`` where ``def net(x): return relu(x @ W1 + b1) @ W2 + b2`` over tensors the
    code trains by hand (``raw_parameters``): a model written as a function, whose every
    call records a graph as a module's forward does. The function computes with them
    (not only reads their shape) and computes no gradient itself (a ``loss_fn`` that
    backpropagates, a training ``step``)."""
    scope = file_model.resolve(call)
    if scope is None or scope.class_name is not None:
        return False
    return file_model.derived(_hand_written_forward, scope)


def _hand_written_forward(file_model: FileModel, scope: Scope) -> bool:
    params = raw_parameters(file_model)
    if not params:
        return False
    free = params - bound_locally(scope)
    values = [a.value for a in scope.assignments if a.value is not None] + [v for _, v in scope.returns]
    if not any(computes_with(file_model, v, free) for v in values):
        return False
    return not any(file_model.needs_autograd(c) for c in file_model.reachable_calls(scope))


def _makes_parameter(file_model: FileModel, value: cst.BaseExpression) -> bool:
    if not isinstance(value, cst.Call):
        return False
    qualified = file_model.names.qualify(dotted(value.func) or "") or ""
    if qualified.endswith(".Parameter") and qualified.startswith("torch."):
        return True
    flag = next((arg.value for arg in value.args if arg.keyword is not None
                 and arg.keyword.value == "requires_grad"), None)
    return qualified.startswith("torch.") and flag is not None and literal_bool(flag) is True


def _named_by(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, order: int) -> set:
    """``W`` for ``W``; for a loop variable ``p``, the names of the list it runs over."""
    path = dotted(expr)
    if path is None:
        return set()
    loops = [a for a in scope.assignments if a.kind == "for" and a.order <= order
             and path in (p for t in a.targets for p in (dotted(t),))]
    if not loops:
        return {path}
    listed = dotted(loops[-1].value)
    if listed is None:
        return set()
    names = set()
    for a in scope.assignments:
        if a.kind == "assign" and a.value is not None and listed in (dotted(t) for t in a.targets):
            names.update(_list_names(a.value))
    return names


def _list_names(value: cst.BaseExpression) -> set:
    """Names a list expression holds: ``[C, W1]``, ``[C] + [p for l in layers for p in ...]``."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        return _list_names(value.left) | _list_names(value.right)
    if isinstance(value, (cst.List, cst.Tuple)):
        return {p for el in value.elements for p in (dotted(el.value),) if p}
    return set()


# -- training that only guards its backward ------------------------------
def guarded_training(file_model: FileModel, scope: Scope) -> Optional[cst.BaseExpression]:
    """The condition around every backward of ``scope`` when it can be false in evaluation:
    a flag some caller passes as False (``train=False``) or a phase loop over evaluation
    phases (``for phase in ("train", "val")``). Forwards before the guard then record a
    graph in evaluation too. None otherwise."""
    return file_model.derived(_guarded_training, scope)


def _guarded_training(file_model: FileModel, scope: Scope) -> Optional[cst.BaseExpression]:
    backwards = file_model.backwards_in(scope)
    if not backwards or scope.grad_switches:
        return None
    guards = [_guard_of(file_model, scope, call) for call in backwards]
    tests = [t for t in guards if t is not None]
    if len(tests) < len(guards):
        return None
    names = {n for t in tests for n in identifiers(t)}
    if _false_flag_passed(file_model, scope, names) or _phase_loop_over_evaluation(scope, names):
        return tests[0]
    return None


def _guard_of(file_model: FileModel, scope: Scope, call: CallSite) -> Optional[cst.BaseExpression]:
    """The test of the innermost ``if`` around ``call`` within ``scope``, if any."""
    chain = ancestors(scope.node, call.node, file_model.parents) or []
    for node in reversed(chain):
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef)):
            return None
        if isinstance(node, cst.If):
            return node.test
    return None


def _false_flag_passed(file_model: FileModel, scope: Scope, names: set) -> bool:
    flags = names & set(scope.params)
    if not flags:
        return False
    for call in file_model.callers.get(scope, ()):
        for arg in call.node.args:
            if arg.keyword is not None and arg.keyword.value in flags:
                if literal_bool(arg.value) is False or _names_evaluation(arg.value):
                    return True
    return False


def _phase_loop_over_evaluation(scope: Scope, names: set) -> bool:
    for loop in scope.loops:
        if not isinstance(loop.node, cst.For):
            continue
        if set(identifiers(loop.node.target)) & names and isinstance(loop.iter, (cst.Tuple, cst.List)):
            if any(_names_evaluation(e.value) for e in loop.iter.elements):
                return True
    return False


def _names_evaluation(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.SimpleString) and node.evaluated_value.lower() in _EVAL_WORDS


# torch functions that draw a random tensor: input made up on the spot, not data.
_RANDOM_FACTORIES = frozenset("rand randn randint randperm rand_like randn_like randint_like normal".split())
# Calls that bring trained weights into a model built here.
_LOADS = frozenset(("load_state_dict", "load_from_checkpoint", "from_pretrained", "load"))


def demonstrates_fresh_layers(file_model: FileModel, call: CallSite) -> bool:
    """A forward pass of layers built in this file on random input, in a file that neither
    trains nor loads weights: ``conv = nn.Conv2d(3, 8, 3)`` then ``conv(torch.randn(1, 3, 32, 32))``
    to show an output shape. No trained model is evaluated; the graph is the lesson's."""
    target = file_model.forward_target(call)
    if target is None or target not in file_model.roles.models or not call.node.args:
        return False
    if not all(_random_input(file_model, call.scope, arg.value, set()) for arg in call.node.args):
        return False
    return not file_model.derived(_trains_or_loads)


def on_random_input(file_model: FileModel, scope: Scope, expr: cst.BaseExpression) -> bool:
    """``torch.randn(...)`` or a local name bound only to such: input made up for a demonstration."""
    return _random_input(file_model, scope, expr, set())


def _random_input(file_model: FileModel, scope: Scope, expr: cst.BaseExpression, seen: set) -> bool:
    """``torch.randn(...)``, a fresh layer run on one, or a local name bound only to those."""
    if isinstance(expr, cst.Name):
        if expr.value in seen or expr.value in scope.params:
            return False
        seen.add(expr.value)
        bindings = [a for a in scope.assignments if any(dotted(t) == expr.value for t in a.targets)]
        return bool(bindings) and all(
            a.kind == "assign" and len(a.targets) == 1 and a.value is not None
            and _random_input(file_model, scope, a.value, seen) for a in bindings)
    if not isinstance(expr, cst.Call):
        return False
    qualified = file_model.names.qualify(dotted(expr.func)) or ""
    if qualified.startswith("torch.") and qualified.rsplit(".", 1)[-1] in _RANDOM_FACTORIES:
        return True
    inner = file_model.call_of(expr)
    return inner is not None and demonstrates_fresh_layers(file_model, inner)


def _trains_or_loads(file_model: FileModel) -> bool:
    """Does anything in the file compute gradients, step an optimizer, or load weights
    (``load_state_dict``, ``torch.load``, ``from_pretrained``, ``weights=``/``pretrained=``)?"""
    for call in file_model.calls:
        if file_model.needs_autograd(call):
            return True
        if call.method in _LOADS or (call.callee or "").rsplit(".", 1)[-1] in _LOADS:
            return True
        for arg in call.node.args:
            if arg.keyword is not None and arg.keyword.value in ("weights", "pretrained") \
                    and literal_bool(arg.value) is not False and dotted(arg.value) != "None":
                return True
    return False


# -- forwards whose output only becomes numbers ---------------------------
# Reads that hand a tensor's values to Python or numpy: nothing after them holds a graph.
# ``int(...)`` of an index (``int(q(s).argmax())``): after ``argmax``/``argmin`` only, which the
# rule's text gate looks for (``float(loss_of(x))`` is a number too, but no gate word says so).
_NUMBER_BUILTINS = frozenset(("int", "float", "bool", "round"))
_INDEX_READS = frozenset(("argmax", "argmin"))


def read_as_numbers(file_model: FileModel, call: CallSite) -> bool:
    """Does the call's result become Python numbers within its own expression, through
    nothing but tensor methods, torch functions, operators and subscripts
    (``q(obs).argmax().item()``, ``int(torch.argmax(net(x)))``,
    ``(model(x).argmax(1) == y).sum().item()``)? Then no name, container or other call
    ever holds it: whatever graph its forward records is dropped unused. Not
    ``dist = Categorical(policy(s))``, whose log-probabilities may reach a loss."""
    return _becomes_numbers(file_model, call.node, call.site.stmt)


def _becomes_numbers(file_model: FileModel, node: cst.CSTNode, stmt: Optional[cst.CSTNode] = None) -> bool:
    """Does the tensor ``node`` stands for become Python numbers within its statement?"""
    parents = file_model.parents
    indexed = False
    while True:
        parent = parents.get(id(node))
        if parent is None or parent is stmt:
            return False
        if isinstance(parent, cst.Attribute) and parent.value is node:
            holder = parents.get(id(parent))
            if isinstance(holder, cst.Call) and holder.func is parent:
                if parent.attr.value in vocab.NUMBER_READ_METHODS:
                    return True
                indexed = indexed or parent.attr.value in _INDEX_READS
                node = holder  # ``.argmax(1)``, ``.squeeze()``, ``.cpu()``: still a tensor
            else:
                node = parent  # ``.logits``, ``.data``
        elif isinstance(parent, cst.Subscript) and parent.value is node:
            node = parent
        elif isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget)):
            node = parent
        elif isinstance(parent, cst.Arg):
            holder = parents.get(id(parent))
            if not isinstance(holder, cst.Call) or parent.keyword is not None or parent.star:
                return False
            callee = dotted(holder.func)
            if callee in _NUMBER_BUILTINS:
                return indexed
            qualified = file_model.names.qualify(callee) or ""
            if not qualified.startswith("torch.") or qualified.startswith(("torch.autograd", "torch.distributions")):
                return False  # a helper, a loss kept elsewhere, a distribution to draw from
            indexed = indexed or qualified.rsplit(".", 1)[-1] in _INDEX_READS
            node = holder
        else:
            return False


# A distribution's draws carry no graph: ``Categorical(probs).sample()`` is numbers' kin; its
# ``log_prob``, ``entropy`` and ``rsample`` are what a loss backpropagates through.
_DRAWS = frozenset(("sample",))


def bound_then_read_as_numbers(file_model: FileModel, call: CallSite) -> bool:
    """``prob = model.pi(s)`` then ``m = Categorical(prob)``, ``a = m.sample().item()``,
    ``put_data((s, a, prob[a].item()))``; or ``a = mu(s)`` then ``a = a.item() + noise``: a
    forward bound to a name that every later read, until the name is bound again, turns into
    numbers or hands to a ``torch.distributions`` constructor that is only sampled. Nothing
    stores, returns, passes on or computes with the output, so its graph is dropped unused.
    Reads run to the end of the statement list holding the forward; where the name is not
    surely bound again there, no other read of it in the scope is allowed (the next
    iteration, the code after the loop). At least one number must be read (``.item()``...)."""
    stmt = call.site.stmt
    if call.site.loop is None or not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
        return False
    target = stmt.targets[0].target
    if isinstance(target, cst.Name) and stmt.value is call.node:
        return _read_as_numbers_after(file_model, call.scope, stmt, target.value, False) is True
    if not isinstance(target, cst.Tuple) or not _reduces(file_model, call.node, stmt.value):
        return False
    # ``values, index = q(s).max(1)``, ``_, a = net(x).topk(1)``: each part read as numbers or never.
    names = [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
    if len(names) != len(target.elements):
        return False
    made = [_read_as_numbers_after(file_model, call.scope, stmt, name, False) for name in names]
    return None not in made and any(made)


# Tensor methods that hand back (values, indices): a forward reduced to a pair of tensors.
_PAIR_METHODS = frozenset(("max", "min", "topk", "sort", "kthvalue", "mode", "median"))


def _reduces(file_model: FileModel, node: cst.CSTNode, value: cst.BaseExpression) -> bool:
    """Is ``value`` ``node.max(1)`` (or ``node.detach().topk(k)``): a forward's output reduced to
    a (values, indices) pair by tensor methods alone?"""
    parents = file_model.parents
    pair = False
    while node is not value:
        parent = parents.get(id(node))
        holder = parents.get(id(parent))
        if not (isinstance(parent, cst.Attribute) and parent.value is node
                and isinstance(holder, cst.Call) and holder.func is parent):
            return False
        pair = parent.attr.value in _PAIR_METHODS
        node = holder
    return pair


def _read_as_numbers_after(file_model: FileModel, scope: Scope, stmt: cst.Assign, name: str,
                           drawn: bool) -> Optional[bool]:
    """Follow ``name`` bound by ``stmt`` to its later reads: None when one of them may keep a
    graph, else whether some read made numbers. ``drawn``: ``name`` holds a distribution,
    which may only be sampled."""
    return reads_after(file_model, scope, stmt, name, lambda read: _read_as(file_model, scope, read, drawn))


def reads_after(file_model: FileModel, scope: Scope, stmt: cst.Assign, name: str,
                read_as: Callable[[cst.Name], Optional[bool]]) -> Optional[bool]:
    """Follow ``name`` bound by ``stmt`` to its later reads, each judged by ``read_as``
    (None: this read may keep the value; True: it made what the caller looks for). None
    when some read may keep it, else whether some read made it."""
    parents = file_model.parents
    line = parents.get(id(stmt))
    block = parents.get(id(line))
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 \
            or not isinstance(block, (cst.IndentedBlock, cst.Module)):
        return None
    statements = list(block.body)
    later = statements[statements.index(line) + 1:]
    made_any, rebound, leaves = False, False, False
    followed: Set[int] = set()
    for statement in later:
        reads, binds = name_uses(statement, name)
        if binds is None:
            return None
        followed.update(map(id, reads))
        for read in reads:
            made = read_as(read)
            if made is None:
                return None
            made_any = made_any or made
        if binds:
            if not isinstance(statement, cst.SimpleStatementLine) or leaves:
                return None  # bound again in a branch, or after a ``break``: maybe not at all
            rebound = True
            break
        leaves = leaves or not isinstance(statement, cst.SimpleStatementLine) or any(
            isinstance(s, (cst.Break, cst.Continue, cst.Return, cst.Raise)) for s in statement.body)
    if not rebound:  # the value outlives the block: read nowhere else
        reads = file_model.derived(_reads_by_name, scope.node).get(name, [])
        if any(id(r) not in followed for r in reads):
            return None
    return made_any


def _reads_by_name(file_model: FileModel, node: cst.CSTNode) -> Dict[str, List[cst.Name]]:
    """``expr.name_uses``'s reads in ``node`` of every name at once: a scope is walked once, not once
    per name followed through it."""
    reads: Dict[str, List[cst.Name]] = {}
    for read in name_uses(node, None)[0]:
        reads.setdefault(read.value, []).append(read)
    return reads


def _read_as(file_model: FileModel, scope: Scope, read: cst.Name, drawn: bool) -> Optional[bool]:
    """One read: None when it may keep a graph, else whether it made numbers."""
    parents = file_model.parents
    parent = parents.get(id(read))
    if drawn:
        holder = parents.get(id(parent))
        if not (isinstance(parent, cst.Attribute) and parent.attr.value in _DRAWS
                and isinstance(holder, cst.Call) and holder.func is parent):
            return None
        return _becomes_numbers(file_model, holder)
    if _becomes_numbers(file_model, read):
        return True
    if not isinstance(parent, cst.Arg) or parent.star or (
            parent.keyword is not None and parent.keyword.value not in ("probs", "logits")):
        return None
    made = parents.get(id(parent))
    if not isinstance(made, cst.Call) or not (
            file_model.names.qualify(dotted(made.func) or "") or "").startswith("torch.distributions."):
        return None
    holder = parents.get(id(made))
    if isinstance(holder, cst.Attribute) and holder.attr.value in _DRAWS:
        draw = parents.get(id(holder))  # ``Categorical(prob).sample()``
        return _becomes_numbers(file_model, draw) if isinstance(draw, cst.Call) and draw.func is holder else None
    if isinstance(holder, cst.Assign) and len(holder.targets) == 1 and isinstance(holder.targets[0].target, cst.Name):
        return _read_as_numbers_after(file_model, scope, holder, holder.targets[0].target.value, True)
    return None


def forwards_that_train(file_model: FileModel) -> bool:
    """Does a model class of this file backpropagate or step an optimizer in its own
    ``forward`` (test-time adaptation: each call takes a step on its output)? Then reading
    numbers off a forward is no sign that its graph goes unused."""
    return file_model.derived(_forwards_that_train)


def _forwards_that_train(file_model: FileModel) -> bool:
    for (_, name), method in file_model.methods.items():
        if name in vocab.FORWARD_METHODS:
            if any(file_model.needs_autograd(c) for c in file_model.reachable_calls(method)):
                return True
    return False
