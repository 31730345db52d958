"""Data-parallel training: what a file wraps in DDP or FSDP, and what feeds and steps it.

The facts the distributed rules (TL901-TL904) ask:

* ``wraps``: every ``DistributedDataParallel(model)``, ``FullyShardedDataParallel(model)``
  and ``fully_shard(model)`` call, with the model it wraps and the names the wrapper is
  bound to. Building one needs an initialised process group, so a file that wraps a
  model runs as one rank of several; where the group is initialised (here, or in a
  helper such as ``utils.init_distributed_mode(args)``) does not matter.
* ``loader_bindings`` and ``loops_over``: the names a ``DataLoader(...)`` of the file is
  bound to, and the loops that iterate it: directly (``for x, y in train_loader``,
  ``enumerate(loader)``, ``next(it)`` after ``it = iter(loader)``), or through the
  functions and classes of the file it is handed to (a parameter, ``self.train_data``
  set in ``__init__``).
* ``runs_repeatedly``: whether a loop runs more than once (inside another loop, or in a
  function called from a loop of the file): an epoch loop around the data loop.

Only torch's classes count, through the file's imports (``names.qualify``): another
library's ``DataLoader`` or sampler has its own rules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, List, Optional, Set, Tuple

import libcst as cst

from torchlint.model.expr import bound_paths, dotted, keyword, positional, referenced_paths

if TYPE_CHECKING:
    from torchlint.model import FileModel
    from torchlint.model.records import Assignment, CallSite, Loop, Scope

DATALOADERS = frozenset(("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"))
DISTRIBUTED_SAMPLERS = frozenset(("torch.utils.data.DistributedSampler",
                                  "torch.utils.data.distributed.DistributedSampler"))
_DDP = frozenset(("torch.nn.parallel.DistributedDataParallel",
                  "torch.nn.parallel.distributed.DistributedDataParallel"))
_FSDP = frozenset(("torch.distributed.fsdp.FullyShardedDataParallel",
                   "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"))
# Methods that hand back the module they are called on, moved or cast: ``DDP(model.to(rank))``
# wraps ``model``.
_MOVES = frozenset("to cuda cpu half float double bfloat16 train".split())
# Calls that turn a loader into an iterator of the same batches (``it = iter(loader)``).
_ITERATORS = frozenset(("iter", "enumerate", "cycle", "tqdm"))


@dataclass(frozen=True)
class Wrap:
    """One data-parallel wrapping: ``kind`` is ddp, fsdp (FullyShardedDataParallel) or
    fully_shard (FSDP2, which changes the module in place and returns it)."""

    call: CallSite
    kind: str
    model: Optional[str]  # the dotted model it wraps: ``model`` in ``DDP(model.to(rank))``
    bound: Tuple[str, ...]  # the names the wrapper is bound to (fully_shard: the model itself)


def wrap_kind(file_model: FileModel, call: CallSite) -> Optional[str]:
    qualified = file_model.qualify(call)
    if qualified is None:
        return None
    if qualified in _DDP:
        return "ddp"
    if qualified in _FSDP:
        return "fsdp"
    if qualified.startswith("torch.distributed.") and qualified.rsplit(".", 1)[-1] == "fully_shard":
        return "fully_shard"
    return None


def wraps(file_model: FileModel) -> List[Wrap]:
    """Every DDP/FSDP/fully_shard call of the file, in source order."""
    return file_model.derived(_wraps)


def _wraps(file_model: FileModel) -> List[Wrap]:
    found = []
    for call in file_model.calls:
        kind = wrap_kind(file_model, call)
        if kind is None:
            continue
        model = unmoved(positional(call.node, 0) or keyword(call.node, "module"))
        bound = tuple(assigned_paths(call))
        if kind == "fully_shard" and model is not None:
            bound = (*bound, model)
        found.append(Wrap(call, kind, model, bound))
    return found


def is_data_parallel(file_model: FileModel) -> bool:
    """Does the file wrap a model for data-parallel training (so it runs as one rank of several)?"""
    return bool(wraps(file_model))


def unmoved(node: Optional[cst.BaseExpression]) -> Optional[str]:
    """The dotted name under moves and casts: ``model`` for ``model.to(rank).float()``."""
    while (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
           and node.func.attr.value in _MOVES):
        node = node.func.value
    return dotted(node) if node is not None else None


def assigned_paths(call: CallSite) -> Iterator[str]:
    """The names a call's value is bound to, when the call is the whole right-hand side:
    ``loader`` in ``loader = DataLoader(...)``, ``self.model`` in ``self.model = DDP(m)``."""
    stmt = call.site.stmt
    if isinstance(stmt, cst.Assign) and stmt.value is call.node:
        for target in stmt.targets:
            path = dotted(target.target)
            if path is not None:
                yield path
    elif isinstance(stmt, cst.AnnAssign) and stmt.value is call.node:
        path = dotted(stmt.target)
        if path is not None:
            yield path


def argument(call: cst.Call, name: str, index: int) -> Optional[cst.Arg]:
    """The argument passing parameter ``name`` (keyword, or positional at ``index``)."""
    seen = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg
            continue
        if arg.star:
            return None
        if seen == index:
            return arg
        seen += 1
    return None


def forwards_kwargs(call: cst.Call) -> bool:
    """``f(**options)``: any argument may be among them."""
    return any(arg.star == "**" for arg in call.args)


# -- where a loader goes -------------------------------------------------------
def loader_bindings(file_model: FileModel, call: CallSite) -> List[Tuple[Scope, str]]:
    """``(scope, name)`` for each name a DataLoader call's value ends up bound to: its own
    assignment; the parameter of a function, method or class of the file it is passed to
    (``Trainer(model, DataLoader(...))``); and, when a function of the file returns it (the
    call, or a name bound to it, alone or in a tuple), the names its callers bind the
    result to (``train_data = prepare_dataloader(dataset)``, ``train_dl, val_dl = get_ds()``)."""
    found: List[Tuple[Scope, str]] = []
    seen: Set[int] = set()
    todo = [call]
    while todo:
        current = todo.pop()
        if id(current.node) in seen:
            continue
        seen.add(id(current.node))
        own = [(current.scope, path) for path in assigned_paths(current)]
        found.extend(own)
        for scope, path in own:
            found.extend(_returned_to(file_model, scope, path))
        stmt = current.site.stmt
        if isinstance(stmt, cst.Return) and stmt.value is current.node and not current.scope.is_module:
            todo.extend(file_model.callers.get(current.scope, ()))
        arg = file_model.parents.get(id(current.node))
        outer = file_model.parents.get(id(arg)) if isinstance(arg, cst.Arg) else None
        outer_call = file_model.call_of(outer) if isinstance(outer, cst.Call) else None
        if outer_call is not None:
            assert isinstance(arg, cst.Arg)  # the argument ``current`` is the value of
            index = next(i for i, a in enumerate(outer_call.node.args) if a is arg)
            found.extend(_parameters_receiving(file_model, outer_call, [(index, arg)]))
    return found


def _returned_to(file_model: FileModel, scope: Scope, path: str) -> Iterator[Tuple[Scope, str]]:
    """Where the callers of ``scope`` bind ``path`` when the function returns it: ``x = f()``
    for ``return path``, the matching element of ``a, b = f()`` for ``return path, other``."""
    if scope.is_module:
        return
    for _, value in scope.returns:
        if dotted(value) == path:
            position: Optional[int] = None
        elif isinstance(value, cst.Tuple) and path in [dotted(e.value) for e in value.elements]:
            position = [dotted(e.value) for e in value.elements].index(path)
        else:
            continue
        for caller in file_model.callers.get(scope, ()):
            stmt = caller.site.stmt
            if not (isinstance(stmt, cst.Assign) and stmt.value is caller.node):
                continue
            for target in (t.target for t in stmt.targets):
                if position is None:
                    bound = dotted(target)
                elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Tuple) \
                        and len(target.elements) == len(value.elements):
                    bound = dotted(target.elements[position].value)
                else:
                    bound = None
                if bound is not None:
                    yield caller.scope, bound


def loops_over(file_model: FileModel, scope: Scope, path: str) -> List[Loop]:
    """The loops that iterate what ``path`` holds in ``scope``, following it into the
    functions and classes of this file it is handed to and through ``it = iter(path)``."""
    return file_model.derived(_loops_over, scope, path)


def _loops_over(file_model: FileModel, scope: Scope, path: str) -> List[Loop]:
    found: List[Loop] = []
    seen: Set[Tuple[int, str]] = set()
    todo = [(scope, path)]
    while todo:
        current, name = todo.pop()
        for place in _places(file_model, current, name):
            if (id(place), name) in seen:
                continue
            seen.add((id(place), name))
            found.extend(loop for loop in place.loops if _iterates(file_model, loop, name))
            todo.extend(_handed_on(file_model, place, name))
    return found


def _places(file_model: FileModel, scope: Scope, name: str) -> List[Scope]:
    """Where ``name`` means the same object: its scope, and for ``self.x`` every method of the class."""
    if name.startswith("self.") and scope.class_name is not None:
        return [s for (cls, _), s in file_model.methods.items() if cls == scope.class_name]
    return [scope]


def _iterates(file_model: FileModel, loop: Loop, name: str) -> bool:
    if loop.iter is not None and name in referenced_paths(loop.iter):
        return True
    # ``while True: batch = next(it)``
    return any(call.callee == "next" and dotted(positional(call.node, 0)) == name
               for call in file_model.calls_in(loop) if call.scope is loop.scope)


def _handed_on(file_model: FileModel, scope: Scope, name: str) -> Iterator[Tuple[Scope, str]]:
    """Where ``name`` goes next: renamed (``it = iter(loader)``), or passed to a function,
    method or class of this file (the parameter that receives it; ``self.x = param`` in
    ``__init__``)."""
    for a in scope.assignments:
        if a.kind != "assign" or a.value is None:
            continue
        value = a.value
        if isinstance(value, cst.Call) and dotted(value.func) in _ITERATORS:
            value = positional(value, 0) or value
        if dotted(value) == name:
            yield from ((scope, path) for path in _target_paths(a))
    for call in scope.calls:
        for target, parameter in _receiving_parameters(file_model, call, name):
            yield target, parameter
            if target.name == "__init__" and target.class_name is not None:
                for a in target.assignments:
                    if a.kind == "assign" and dotted(a.value) == parameter:
                        yield from ((target, path) for path in _target_paths(a) if path.startswith("self."))


def _target_paths(a: Assignment) -> Iterator[str]:
    """The dotted names an assignment binds as a whole (not the parts of an unpacking)."""
    for target in a.targets:
        path = dotted(target)
        if path is not None:
            yield path


def _receiving_parameters(file_model: FileModel, call: CallSite, name: str) -> Iterator[Tuple[Scope, str]]:
    """``(callee scope, parameter)`` for each argument of ``call`` that passes ``name`` to a
    function, method or class (its ``__init__``) of this file."""
    passed = [(i, arg) for i, arg in enumerate(call.node.args) if dotted(arg.value) == name]
    return _parameters_receiving(file_model, call, passed)


def _parameters_receiving(file_model: FileModel, call: CallSite,
                          passed: List[Tuple[int, cst.Arg]]) -> Iterator[Tuple[Scope, str]]:
    """``(callee scope, parameter)`` receiving each of ``passed`` (``(index, argument)`` of
    ``call``) when ``call`` runs a function, method or class (its ``__init__``) of this file."""
    if not passed or any(arg.star for arg in call.node.args):
        return
    target = file_model.resolve(call)
    skip_self = target is not None and target.class_name is not None and (call.callee or "").startswith("self.")
    if target is None and call.callee in file_model.class_bases:
        target = file_model.methods.get((call.callee, "__init__"))
        skip_self = True
    if target is None:
        return
    params = list(target.params)
    if skip_self and params and params[0] in ("self", "cls"):
        params = params[1:]
    for index, arg in passed:
        if arg.keyword is not None:
            if arg.keyword.value in params:
                yield target, arg.keyword.value
        elif index < len(params):
            yield target, params[index]


def handed_to_calls(file_model: FileModel, scope: Scope, path: str) -> List[CallSite]:
    """The calls of ``scope`` (and of the methods sharing ``self.x``) that take ``path`` as an argument."""
    return [call for place in _places(file_model, scope, path) for call in place.calls
            if any(dotted(arg.value) == path for arg in call.node.args)]


def replaced_through_call(file_model: FileModel, scope: Scope, path: str) -> bool:
    """Is ``path`` handed to a call whose result is bound to ``path`` again: a library that
    takes the loader over and gives back its own (``model, opt, loader =
    accelerator.prepare(model, opt, loader)``, ``loader = fabric.setup_dataloaders(loader)``,
    Opacus' ``make_private(data_loader=loader)``)?"""
    for call in handed_to_calls(file_model, scope, path):
        stmt = call.site.stmt
        if isinstance(stmt, cst.Assign) and stmt.value is call.node and any(
                path in bound_paths(t.target) for t in stmt.targets):
            return True
    return False


def runs_repeatedly(file_model: FileModel, loop: Loop) -> bool:
    """Does the loop run more than once: inside another loop, or in a function that a
    loop of this file calls (at any depth)?"""
    return loop.parent is not None or scope_repeats(file_model, loop.scope)


def scope_repeats(file_model: FileModel, scope: Scope) -> bool:
    """Is the function called from a loop of this file, directly or through its callers?"""
    seen: Set[int] = set()
    todo = [scope]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for caller in file_model.callers.get(current, ()):
            if caller.site.loop is not None:
                return True
            todo.append(caller.scope)
    return False


