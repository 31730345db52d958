"""Learning-rate schedulers: which names hold one, which optimizer it drives.

A scheduler is known by its construction first: ``torch.optim.lr_scheduler.X(opt, ...)``
(however torch is imported: ``lr_scheduler.StepLR``, ``optim.lr_scheduler.OneCycleLR``,
``from torch.optim.lr_scheduler import CosineAnnealingLR``; a project's own
``lr_scheduler`` module is not torch's), ``swa_utils.SWALR``, and
transformers' ``get_*_schedule*`` factories. Where the file builds nothing under a
name, the name alone (``scheduler``, ``lr_scheduler``, ``sched``) is the fallback;
a name the file binds to something else (a diffusers noise scheduler, a
hand-written schedule object) is no learning-rate scheduler.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple, Optional

import libcst as cst

from torchlint.model.expr import dotted, keyword
from torchlint.model.vocab import last_name

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.model import FileModel

SCHEDULER_NAMES = frozenset(("scheduler", "lr_scheduler", "sched", "lr_sched"))
# Schedulers whose step() takes a metric and may run whenever validation does.
METRIC_SCHEDULERS = frozenset(("ReduceLROnPlateau",))
_FACTORY = re.compile(r"^get_\w*schedul")  # get_linear_schedule_with_warmup, get_scheduler


class Scheduler(NamedTuple):
    kind: Optional[str]  # the class or factory that built it; None when told by name only
    optimizer: Optional[str]  # the optimizer it was built on, when visible

    @property
    def takes_metric(self) -> bool:
        return self.kind in METRIC_SCHEDULERS


def _built_scheduler(file_model: FileModel, value: cst.Call) -> Optional[str]:
    """The class or factory name when ``value`` builds a learning-rate scheduler."""
    callee = dotted(value.func)
    if callee is None:
        return None
    last = last_name(callee)
    if _is_torch_scheduler(file_model, callee) or _FACTORY.match(last):
        return last
    bases = file_model.class_bases.get(callee, ())  # class WarmupLR(lr_scheduler._LRScheduler)
    return last if any(_is_torch_scheduler(file_model, base) for base in bases) else None


def _is_torch_scheduler(file_model: FileModel, path: str) -> bool:
    qualified = file_model.names.qualify(path) or ""
    return qualified.startswith("torch.optim.lr_scheduler.") or qualified.endswith("swa_utils.SWALR")


def _built_on(file_model: FileModel, value: cst.Call) -> Optional[str]:
    """The optimizer a scheduler's construction takes: ``optimizer=`` or the first optimizer argument."""
    named = keyword(value, "optimizer")
    if named is not None:
        return dotted(named)
    for arg in value.args:
        path = dotted(arg.value) if arg.keyword is None else None
        if file_model.is_optimizer(path):
            return path
    return None


def _constructions(file_model: FileModel) -> dict:
    """``{path: [Scheduler or None, ...]}``: what each call bound to a name builds (None: no scheduler)."""
    built: dict = {}
    for a in file_model.assignments:
        if a.kind != "assign" or not isinstance(a.value, cst.Call):
            continue
        for target in a.targets:
            path = dotted(target)
            if path is not None:
                built.setdefault(path, []).append(_scheduler_built_by(file_model, a.value))
    return built


def _scheduler_built_by(file_model: FileModel, value: cst.Call) -> Optional[Scheduler]:
    kind = _built_scheduler(file_model, value)
    return Scheduler(kind, _built_on(file_model, value)) if kind else None


def scheduler_of(file_model: FileModel, path: Optional[str], scope: Optional[Scope] = None) -> Optional[Scheduler]:
    """The learning-rate scheduler ``path`` holds in ``scope``, or None when it holds none
    (or we cannot tell).

    A construction in the scope itself decides; else every construction under
    that name in the file: a metric scheduler among them (``ReduceLROnPlateau``)
    makes it one, and a name only ever built by other calls holds no scheduler.
    """
    if path is None:
        return None
    if scope is not None:
        own = [_scheduler_built_by(file_model, a.value) for a in scope.assignments
               if a.kind == "assign" and isinstance(a.value, cst.Call) and any(dotted(t) == path for t in a.targets)]
        if own:
            return _one_of(own)
    built = file_model.derived(_constructions).get(path)
    if built:
        return _one_of(built)
    return Scheduler(None, None) if last_name(path) in SCHEDULER_NAMES else None


def _one_of(built: list) -> Optional[Scheduler]:
    schedulers = [s for s in built if s is not None]
    if not schedulers:
        return None
    metric = [s for s in schedulers if s.takes_metric]
    if metric:
        return metric[0]
    optimizers = {s.optimizer for s in schedulers}
    return schedulers[0] if len(optimizers) == 1 else Scheduler(schedulers[0].kind, None)
