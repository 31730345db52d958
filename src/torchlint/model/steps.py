"""Optimizer steps in program order: what a step updates, what runs before and after it.

Questions TL203 and TL204 ask about one iteration of a training loop:

* which models' weights an optimizer updates, read from its construction
  (``Adam(netD.parameters())``, ``[{"params": model.head.parameters()}]``), with
  the GAN roles of ``gan.py`` (``optimizerD`` steps ``netD``) where the
  construction is not in the file;
* which forward passes a tensor was computed from (``out = D(fake)``;
  ``loss_G = bce(out, ones)``), following the function's own bindings back and
  stopping where the graph is cut (``detach``, ``no_grad``, ``argmax``);
* which optimizers a call steps, itself or through a same-module helper
  (``train_one_epoch(model, optimizer)``);
* whether one pass can run one statement after another (not in branches that
  exclude each other, no ``continue`` right after the first).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst

from torchlint.model import flow_back
from torchlint.model.expr import dotted, read_paths
from torchlint.model.gan import is_discriminator_name, is_generator_name, optimizer_role
from torchlint.model.grad import GradMode
from torchlint.model.leaves import reaching_value
from torchlint.model.vocab import KILL_BUILTINS, KILL_METHODS, KILL_TORCH
from torchlint.model.tree import ancestors
from torchlint.model.vocab import FRESH_METHODS, GRAPH_CUT_METHODS, PARAMETER_ITERATORS, last_name
from torchlint.model.walk import children

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, CallSite, Scope
    from torchlint.model import FileModel

_MAX_DEPTH = 8
# Methods whose result carries no graph of the receiver's: ``detach()``, ``item()``, ``argmax()``.
_CUT_METHODS = GRAPH_CUT_METHODS | KILL_METHODS


def _flat(shape: Union[bool, Tuple[bool, ...]]) -> Tuple[bool, ...]:
    return shape if isinstance(shape, tuple) else (shape,)


# -- what an optimizer updates --------------------------------------------------
def _optimizer_models(file_model: FileModel, scope: Optional[Scope] = None) -> dict:
    """``{optimizer path: frozenset of model paths}`` whose ``parameters()`` its construction
    holds (``held_parameters_of``), in ``scope`` (the whole file when None).

    An optimizer built from something else (a list handed in, a function's
    result) gets no entry: what it updates is not visible here.
    """
    found: dict = {}
    for a in scope.assignments if scope is not None else file_model.assignments:
        if a.kind != "assign" or not isinstance(a.value, cst.Call):
            continue
        targets = [p for p in map(dotted, a.targets) if p]
        if not any(p in file_model.optimizer_names for p in targets):
            continue
        models = frozenset(held_parameters_of(a))
        for path in targets:
            if models:
                found[path] = found.get(path, frozenset()) | models
    return found


def _parameter_owners(node: cst.CSTNode) -> Iterator[str]:
    """``netD`` for every ``netD.parameters()`` / ``netD.named_parameters()`` under ``node``."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if (isinstance(cur, cst.Call) and isinstance(cur.func, cst.Attribute)
                and cur.func.attr.value in PARAMETER_ITERATORS):
            owner = dotted(cur.func.value)
            if owner is not None:
                yield owner
        stack.extend(children(cur))


def held_parameters_of(optimizer: Assignment) -> Set[str]:
    """The models whose ``parameters()`` the optimizer built in ``optimizer`` holds: read in
    its construction (``SGD(model.parameters())``), or in the bindings, before it, of the
    names it reads (``params = [p for p in model.parameters() if p.requires_grad]``,
    ``params = itertools.chain(enc.parameters(), dec.parameters())``,
    ``params = list(a.parameters()) + list(b.parameters())``)."""
    value = optimizer.value
    if value is None:
        return set()
    scope = optimizer.site.scope
    owners = set(_parameter_owners(value))
    names = flow_back(set(read_paths(value)), scope)
    for a in scope.assignments:
        if a.order < optimizer.order and a.value is not None and any(dotted(t) in names for t in a.targets):
            owners.update(_parameter_owners(a.value))
    return owners


def updates_model(file_model: FileModel, optimizer: str, model: str, scope: Optional[Scope] = None) -> bool:
    """Does stepping ``optimizer`` change weights that a forward pass of ``model`` uses?

    From the optimizer's construction when the file has it, in ``scope`` first
    (``model`` or a part of it among the owners, or a part of ``model``:
    ``model.head``); otherwise from GAN roles only (``optimizerD`` and
    ``netD``). Unsure is no.
    """
    owners = None
    if scope is not None:
        owners = file_model.derived(_optimizer_models, scope).get(optimizer)
    if owners is None:
        owners = file_model.derived(_optimizer_models).get(optimizer)
    if owners is not None:
        return any(model == m or model.startswith(m + ".") or m.startswith(model + ".") for m in owners)
    role = optimizer_role(optimizer)
    name = last_name(model)
    return (role == "D" and is_discriminator_name(name)) or (role == "G" and is_generator_name(name))


# -- where a tensor came from ---------------------------------------------------
def model_called(file_model: FileModel, call: CallSite) -> Optional[str]:
    """The model a call runs forward (``netD`` for ``netD(x)``, ``model.encoder`` for
    ``model.encoder(x)``, ``D`` for ``D(x)``), or None when it is no forward pass."""
    if file_model.is_forward(call):
        return file_model.forward_target(call)
    if file_model.is_submodule_forward(call):
        return call.callee
    callee = call.callee
    if callee is not None and file_model.names.qualify(callee) is None:
        name = last_name(callee)
        if is_discriminator_name(name) or is_generator_name(name):
            return callee  # D(x), G(z): GAN roles, capitalised
    return None


def forward_sources(file_model: FileModel, scope: Scope, expr: Optional[cst.BaseExpression],
                    order: int) -> Iterator[CallSite]:
    """The forward passes (CallSites) whose outputs ``expr``, read at ``order``, is computed from.

    Follows the scope's bindings back (the one reaching each read, and ``+=``
    after it), through arithmetic, indexing, tensor methods, torch functions
    losses and the arguments of other calls (a loss function by any name);
    stops at ``detach()``/``.data``/``.item()``, at results without a graph
    (``argmax``, ``float()``), at calls made under ``no_grad`` and at helpers
    of this module that return no graph.
    """
    yield from _Sources(file_model, scope).of(expr, order, 0)


class _Sources:
    def __init__(self, file_model: FileModel, scope: Scope) -> None:
        self.file_model = file_model
        self.scope = scope
        self.seen: set = set()

    def of(self, expr: Optional[cst.BaseExpression], order: int, depth: int) -> Iterator[CallSite]:
        if expr is None or depth > _MAX_DEPTH:
            return
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t in (cst.Name, cst.Attribute):
            yield from self._read(e, order, depth)
        elif t is cst.Call:
            yield from self._call(e, order, depth)
        elif t is cst.Subscript:
            yield from self.of(e.value, order, depth + 1)
        elif t in (cst.BinaryOperation, cst.BooleanOperation):
            yield from self.of(e.left, order, depth + 1)
            yield from self.of(e.right, order, depth + 1)
        elif t is cst.UnaryOperation:
            yield from self.of(e.expression, order, depth + 1)
        elif t is cst.IfExp:
            yield from self.of(e.body, order, depth + 1)
            yield from self.of(e.orelse, order, depth + 1)
        elif t in (cst.Tuple, cst.List):
            for element in e.elements:
                yield from self.of(element.value, order, depth + 1)

    def _read(self, expr: Union[cst.Name, cst.Attribute], order: int, depth: int) -> Iterator[CallSite]:
        if isinstance(expr, cst.Attribute) and expr.attr.value in FRESH_METHODS:
            return  # out.data
        path = dotted(expr)
        if path is None:  # ``f(x).out``: an Attribute (a Name is always dotted)
            if isinstance(expr, cst.Attribute):
                yield from self.of(expr.value, order, depth + 1)
            return
        parts = path.split(".")
        for end in range(len(parts), 0, -1):  # ``logits`` bound, ``logits.mean`` read
            prefix = ".".join(parts[:end])
            reaching = reaching_value(self.file_model, self.scope, prefix, order)
            if reaching is not None:
                yield from self._binding(prefix, reaching, order, depth)
                return

    def _binding(self, path: str, reaching: Tuple[Assignment, Optional[cst.BaseExpression]], order: int,
                 depth: int) -> Iterator[CallSite]:
        a, value = reaching
        if a.kind == "assign" and id(a) not in self.seen:
            self.seen.add(id(a))
            yield from self.of(value, a.order, depth + 1)
        for later in self.scope.assignments:  # loss += term after the binding
            if a.order < later.order < order and later.kind == "aug" and dotted(later.targets[0]) == path:
                if id(later) not in self.seen:
                    self.seen.add(id(later))
                    yield from self.of(later.value, later.order, depth + 1)

    def _call(self, expr: cst.Call, order: int, depth: int) -> Iterator:
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _CUT_METHODS:
            return
        file_model = self.file_model
        call = file_model.call_of(expr)
        if call is None or file_model.grad_at(call.site) is GradMode.NO_GRAD or call.callee in KILL_BUILTINS:
            return
        qualified = file_model.qualify(call)
        if qualified is not None and last_name(qualified) in KILL_TORCH:
            return  # torch.argmax(out): no graph
        if model_called(file_model, call) is not None:
            yield call
        else:
            target = file_model.resolve(call)
            if target is not None and not any(_flat(file_model.returns_graph(target))):
                return  # a helper of this module that returns no graph
            if isinstance(func, cst.Attribute) and file_model.names.qualify(dotted(func.value)) is None:
                yield from self.of(func.value, order, depth + 1)  # out.mean(), out.view(-1)
        # Arguments: a loss of the output (``bce(out, ones)``, ``self.criterion(out, y)``),
        # ``torch.cat([a, b])``, the input of a forward pass (``D(G(z))``).
        yield from self._arguments(expr, order, depth)

    def _arguments(self, expr: cst.Call, order: int, depth: int) -> Iterator:
        for arg in expr.args:
            yield from self.of(arg.value, order, depth + 1)


# -- which optimizers a call steps ----------------------------------------------
def optimizers_stepped_by(file_model: FileModel, call: CallSite) -> frozenset:
    """The optimizers ``call`` steps: itself (``opt.step()``, ``scaler.step(opt)``), or,
    for a call of a same-module function, every step that function reaches."""
    direct = file_model.stepped_optimizer(call)
    if direct is not None:
        return frozenset((direct,))
    target = file_model.resolve(call)
    if target is None:
        return frozenset()
    return frozenset(filter(None, map(file_model.stepped_optimizer, file_model.reachable_calls(target))))


# -- control flow ---------------------------------------------------------------
_LOOP_JUMPS = (cst.Continue, cst.Break)
_SCOPE_JUMPS = (cst.Return, cst.Raise)


def may_run_after(scope: Scope, first: cst.CSTNode, second: cst.CSTNode,
                  parents: Optional[Dict[int, cst.CSTNode]] = None) -> bool:
    """Can one pass through ``scope`` (one iteration of the loops around both) run
    ``second`` after ``first``? Not when they stand in different branches of one
    ``if`` (or ``match``), nor when a block holding ``first`` (and not ``second``)
    leaves right after it: ``optimizer.step(); continue``.

    The caller knows ``first`` comes before ``second`` in the source; ``parents``: the model's
    parent map (``FileModel.parents``), which spares a search of the scope.
    """
    chain_a, chain_b = ancestors(scope.node, first, parents), ancestors(scope.node, second, parents)
    if chain_a is None or chain_b is None:
        return True
    chain_a, chain_b = chain_a + [first], chain_b + [second]
    depth = 0
    while depth < min(len(chain_a), len(chain_b)) and chain_a[depth] is chain_b[depth]:
        depth += 1
    if depth == 0 or depth >= min(len(chain_a), len(chain_b)):
        return True  # one holds the other
    parent = chain_a[depth - 1]
    if isinstance(parent, cst.If) and chain_a[depth] is not parent.test and chain_b[depth] is not parent.test:
        return False
    if isinstance(parent, cst.Match):
        return False
    return not _leaves_after(chain_a[depth - 1:])


def _leaves_after(chain: List[cst.CSTNode]) -> bool:
    """Does a block on ``chain`` (from the common ancestor down to the node) end its run with a
    ``continue``/``break``/``return``/``raise`` after the statement that holds the node? A
    ``continue`` or ``break`` inside a loop below the common ancestor only ends that loop."""
    loop_below = False
    for block, child in zip(chain, chain[1:]):
        if isinstance(block, (cst.For, cst.While)) and block is not chain[0]:
            loop_below = True
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)):
            continue
        index = next((i for i, statement in enumerate(body) if statement is child), None)
        if index is None:
            continue
        jumps = _SCOPE_JUMPS if loop_below else _SCOPE_JUMPS + _LOOP_JUMPS
        for statement in body[index + 1:]:
            small = statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,)
            if any(isinstance(s, jumps) for s in small):
                return True
    return False
