"""Datasets that draw random numbers from a generator DataLoader workers each get a copy of.

A ``DataLoader`` with ``num_workers > 0`` starts worker processes that each
hold a copy of the dataset (forked, or pickled under ``spawn``). torch seeds
three generators in every worker, differently per worker and per epoch:
torch's own, Python's ``random`` and (since torch 1.9) NumPy's global
``np.random``. A generator object the dataset holds itself is copied as it
is: ``self.rng = np.random.default_rng()`` in ``__init__``, a
``np.random.RandomState(0)``, a ``random.Random()`` or a ``torch.Generator()``
at module level. Every worker then draws the same numbers, and since the
main process's generator never advances, every epoch draws them again: the
"random" augmentations repeat across workers and epochs. Before torch 1.9
the global ``np.random`` behaved the same way.

``rng_draws`` answers, per dataset class of the file, which of those its
``__getitem__`` (or ``__iter__``, and the methods of the class they call)
draws from; ``loaders_of`` finds the ``DataLoader`` calls of the file that
load an instance of a class in worker processes without a ``worker_init_fn``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from torchlint.model.constructions import class_and_bases
from torchlint.model.expr import dotted, keyword, positional

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Scope
    from torchlint.model import FileModel

# Constructors of generator objects, by qualified name: NumPy's, Python's, torch's.
GENERATOR_CLASSES = frozenset((
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "random.Random", "torch.Generator",
))
# np.random functions that do not draw (they seed, make generators, or read state).
_NOT_DRAWING = frozenset("seed default_rng RandomState Generator SeedSequence PCG64 MT19937 Philox SFC64 "
                         "BitGenerator get_state set_state get_bit_generator set_bit_generator".split())
_DATALOADERS = frozenset(("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"))
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory,
#            drop_last, timeout, worker_init_fn, ...)
_NUM_WORKERS_AT, _WORKER_INIT_AT = 5, 10
_ITEM_METHODS = ("__getitem__", "__iter__", "__getitems__")
GLOBAL_NUMPY = "np.random"  # the label of draws from NumPy's global generator


@dataclass(frozen=True)
class WorkerCopiedDraws:
    """A DataLoader whose workers each draw from a copy of the same generator."""

    loader: CallSite
    dataset_class: str
    generators: Tuple[str, ...]  # ``self.rng``, ``rng``, or ``np.random`` (global NumPy)


def _generator_construction(file_model: FileModel, value: Optional[cst.BaseExpression]) -> bool:
    """``np.random.default_rng(0)``, ``random.Random()``, ``torch.Generator().manual_seed(1)``."""
    while isinstance(value, cst.Call):
        qualified = file_model.names.qualify_any(dotted(value.func))
        if qualified in GENERATOR_CLASSES:
            return True
        func = value.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "manual_seed"):
            return False
        value = func.value  # torch.Generator().manual_seed(0) is the generator itself
    return False


def held_generators(file_model: FileModel, cls: str) -> FrozenSet[str]:
    """Paths of generator objects made once and held: ``self.<attr>`` bound in ``__init__``
    of ``cls`` (or a base class of this file), and module-level names."""
    found: Set[str] = set()
    for a in file_model.module_scope.assignments:
        if a.kind == "assign" and _generator_construction(file_model, a.value):
            found.update(p for p in map(dotted, a.targets) if p)
    for klass in class_and_bases(file_model, cls):
        init = file_model.methods.get((klass, "__init__"))
        if init is None:
            continue
        for a in init.assignments:
            if a.kind == "assign" and _generator_construction(file_model, a.value):
                found.update(p for p in map(dotted, a.targets) if p and p.startswith("self."))
    return frozenset(found)


def _item_scopes(file_model: FileModel, cls: str) -> List[Scope]:
    """``__getitem__``/``__iter__`` of ``cls`` (or inherited here), and the methods they call
    on ``self``: what runs in a worker per sample."""
    lineage = class_and_bases(file_model, cls)
    found: List[Scope] = []
    todo = [scope for name in _ITEM_METHODS for scope in _method(file_model, lineage, name)]
    while todo:
        scope = todo.pop()
        if scope in found:
            continue
        found.append(scope)
        for call in file_model.calls_in(scope):
            if call.receiver == "self" and call.method is not None:
                todo.extend(_method(file_model, lineage, call.method))
    return found


def _method(file_model: FileModel, lineage: Sequence[str], name: str) -> List[Scope]:
    for klass in lineage:
        scope = file_model.methods.get((klass, name))
        if scope is not None:
            return [scope]
    return []


def rng_draws(file_model: FileModel, cls: str) -> Tuple[str, ...]:
    """The generators ``cls`` draws from per sample, in a worker: held ones (``self.rng``) and,
    labelled ``np.random``, NumPy's global one. Empty when the class reseeds a generator itself
    or asks which worker it runs in (``get_worker_info()``): it handles workers on purpose."""
    return file_model.derived(_rng_draws, cls)


def _rng_draws(file_model: FileModel, cls: str) -> Tuple[str, ...]:
    held = held_generators(file_model, cls)
    drawn: List[str] = []
    for scope in _item_scopes(file_model, cls):
        for call in file_model.calls_in(scope):
            if call.method == "get_worker_info" or (call.method or "").endswith("seed"):
                return ()
            receiver = call.receiver
            if receiver in held and receiver not in drawn:
                drawn.append(receiver)
            generator = keyword(call.node, "generator")
            path = dotted(generator) if generator is not None else None
            if path in held and path not in drawn:
                drawn.append(path)
            qualified = file_model.names.qualify_any(call.callee) or ""
            if qualified.startswith("numpy.random.") and qualified.count(".") == 2 \
                    and call.method not in _NOT_DRAWING and GLOBAL_NUMPY not in drawn:
                drawn.append(GLOBAL_NUMPY)
        for a in scope.assignments:  # a generator made in the worker, per sample or lazily
            if a.kind == "assign" and _generator_construction(file_model, a.value):
                rebound = {p for p in map(dotted, a.targets) if p}
                drawn = [d for d in drawn if d not in rebound]
                held = held - rebound
    return tuple(drawn)


def dataset_class(file_model: FileModel, call: CallSite) -> Optional[str]:
    """The class of this file a DataLoader call loads: ``DataLoader(Noisy(...))``, or a name
    every binding of which in the file builds one (``train_set = Noisy(...)``)."""
    dataset = positional(call.node, 0) or keyword(call.node, "dataset")
    if isinstance(dataset, cst.Call):
        return _built_class(file_model, dataset)
    path = dotted(dataset) if dataset is not None else None
    if path is None:
        return None
    classes = {_built_class(file_model, a.value) for a in file_model.assignments
               if a.kind == "assign" and path in map(dotted, a.targets)}
    return classes.pop() if len(classes) == 1 else None


def _built_class(file_model: FileModel, value: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(value, cst.Call):
        name = dotted(value.func)
        if name in file_model.class_bases:
            return name
    return None


def uses_workers(call: cst.Call) -> bool:
    """``num_workers`` given and not a literal 0 (a name may hold any count)."""
    workers = keyword(call, "num_workers") or positional(call, _NUM_WORKERS_AT)
    return workers is not None and not (isinstance(workers, cst.Integer) and workers.evaluated_value == 0)


def initialises_workers(call: cst.Call) -> bool:
    """``worker_init_fn`` given (and not ``None``), or ``**kwargs`` that may give it."""
    if any(arg.star == "**" for arg in call.args):
        return True
    init = keyword(call, "worker_init_fn") or positional(call, _WORKER_INIT_AT)
    return init is not None and not (isinstance(init, cst.Name) and init.value == "None")


def copied_draws(file_model: FileModel, global_numpy: bool) -> Iterator[WorkerCopiedDraws]:
    """The DataLoader calls of the file whose workers draw from copies of one generator.
    ``global_numpy``: count NumPy's global generator too (torch before 1.9 left it unseeded)."""
    for call in file_model.calls:
        if file_model.qualify(call) not in _DATALOADERS or not uses_workers(call.node) \
                or initialises_workers(call.node):
            continue
        cls = dataset_class(file_model, call)
        if cls is None:
            continue
        generators = tuple(g for g in rng_draws(file_model, cls) if global_numpy or g != GLOBAL_NUMPY)
        if generators:
            yield WorkerCopiedDraws(call, cls, generators)

