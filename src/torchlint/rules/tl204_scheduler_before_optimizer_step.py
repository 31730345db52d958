"""TL204: scheduler.step() before optimizer.step() in the same iteration skips the first learning rate."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Set
import libcst as cst

from torchlint.model import FileModel
from torchlint.model.expr import dotted, identifiers, referenced_paths
from torchlint.model.schedules import scheduler_of
from torchlint.model.steps import may_run_after, optimizers_stepped_by
from torchlint.model.tree import ancestors
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Loop
    from torchlint.rule import Finding

# The torch release since which the optimizer steps before the scheduler.
_ORDER_REVERSED = (1, 1)


def _steps_its_optimizer(file_model: FileModel, call: CallSite, optimizer: Optional[str]) -> bool:
    """Does ``call`` step the scheduler's optimizer (any optimizer, when that is not known)?

    A helper counts when it steps that optimizer by name or is handed it
    (``train_one_epoch(model, optimizer)``): inside, it may have another name.
    """
    stepped = optimizers_stepped_by(file_model, call)
    if not stepped or optimizer is None or optimizer in stepped:
        return bool(stepped)
    return file_model.stepped_optimizer(call) is None and any(
        optimizer in set(referenced_paths(arg.value)) for arg in call.node.args
    )


def _deliberate(file_model: FileModel, loop: Loop, scheduler_call: CallSite) -> bool:
    """Signs the author steps the scheduler first on purpose and knows what it does:

    * a guard that reads the iteration count or compares numbers (``if epoch > 0:
      scheduler.step()``) may run the step after the previous iteration's
      optimizer steps (``if scheduler is not None:`` is no such guard);
    * the step is under ``warnings.catch_warnings()``: PyTorch's warning about
      this very order is silenced;
    * the file sets ``scheduler.last_epoch`` itself (ultralytics sets it to
      ``start_epoch - 1`` so that the first step lands on the first epoch).
    """
    counters = set(identifiers(loop.node.target)) if isinstance(loop.node, cst.For) else set()
    for node in ancestors(loop.node, scheduler_call.node, file_model.parents) or ():
        if isinstance(node, cst.If) and _counts(node.test, counters):
            return True
        if isinstance(node, cst.With) and any(_catches_warnings(item.item) for item in node.items):
            return True
    return any(
        isinstance(t, cst.Attribute) and t.attr.value == "last_epoch" and dotted(t.value) == scheduler_call.receiver
        for a in file_model.assignments if a.kind in ("assign", "aug") for t in a.targets
    )


def _catches_warnings(item: cst.BaseExpression) -> bool:
    return isinstance(item, cst.Call) and (dotted(item.func) or "").endswith("catch_warnings")


_ORDERING = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def _counts(test: cst.BaseExpression, counters: Set[str]) -> bool:
    """Does an ``if`` test compare numbers, take a modulo or read the loop's counter?"""
    stack = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, _ORDERING) for c in node.comparisons):
                return True
            if counters & set(identifiers(node)):
                return True
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return True
        elif isinstance(node, cst.BooleanOperation):
            stack.extend((node.left, node.right))
        elif isinstance(node, cst.UnaryOperation):
            stack.append(node.expression)
        elif isinstance(node, (cst.Name, cst.Attribute)) and counters & set(identifiers(node)):
            return True  # if step: ...
    return False


class SchedulerBeforeOptimizerStep(Rule):
    code = "TL204"
    name = "scheduler-before-optimizer-step"
    message = (
        "scheduler.step() runs before this iteration's optimizer.step(), so the first learning rate "
        "of the schedule is skipped; call scheduler.step() after optimizer.step()"
    )
    torch_programs_only = True
    needs = Text(r"\.step\(\s*\)") & Text(r"(?i:sched)|SWALR")
    torch_version = """
PyTorch 1.1 reversed the order: before it, `scheduler.step()` ran at the start
of an epoch, before the optimizer's steps, and that was correct. For a project
whose oldest supported torch (`target-torch-version`) is older than 1.1, the
rule reports nothing.
"""
    docs = """
## What it does
Finds a learning-rate scheduler's `step()` that runs, in one iteration of a
loop, before the `optimizer.step()` it schedules: directly (`scheduler.step()`
at the top of the epoch, the batches' `optimizer.step()` after it) or through
a helper of the same module that visibly steps the optimizer
(`scheduler.step()` and then `train(model, loader, optimizer)` in the epoch
loop).

Schedulers are known by their construction (`torch.optim.lr_scheduler.X(...)`
however imported, `swa_utils.SWALR`, transformers' `get_*_schedule*`) and,
where the file builds none under that name, by the names `scheduler`,
`lr_scheduler` and `sched`.

## Why is this bad
Since PyTorch 1.1 a scheduler is stepped after the optimizer. Stepped
before, the first update already uses the schedule's *second* value: the
first epoch (or warm-up step) of the schedule is skipped and every later one
comes one step early, so `StepLR` decays an epoch too soon and a warm-up never
trains at its starting rate. PyTorch warns once ("Detected call of
`lr_scheduler.step()` before `optimizer.step()`"), which is easy to miss in a
long log, and the run's results no longer match the schedule it reports.

Not reported: `ReduceLROnPlateau.step(val_loss)` after validation (and any
`step(...)` given an argument), a per-epoch scheduler stepped after the
inner training loop, `scheduler.step()` at the end of an iteration after
the optimizer's step, `scheduler.step()` after a helper that trains
(`train_one_epoch(...)` then `scheduler.step()`), a helper torchlint cannot
see into, a step guarded by the iteration count (`if epoch > 0:
scheduler.step()`), and code that steps first on purpose: under
`warnings.catch_warnings()`, or where the file sets `scheduler.last_epoch`
itself to shift the schedule.

## Example
```python
for epoch in range(epochs):
    scheduler.step()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
```

## Use instead
```python
for epoch in range(epochs):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    scheduler.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if file_model.target_torch_version < _ORDER_REVERSED:
            return
        for call in file_model.calls:
            loop = call.site.loop
            if call.method != "step" or call.node.args or loop is None:
                continue
            scheduler = scheduler_of(file_model, call.receiver, call.scope)
            if scheduler is None or scheduler.takes_metric:
                continue
            if self._before_optimizer_step(file_model, call, loop, scheduler.optimizer):
                yield self.report(call.node)

    @staticmethod
    def _before_optimizer_step(file_model: FileModel, call: CallSite, loop: Loop, optimizer: Optional[str]) -> bool:
        """In one iteration of the innermost loop around ``call``: no step of its optimizer
        before it, one after it that the same pass can reach, and no sign it is meant.
        ``loop``: the one around ``call`` (``call.site.loop``)."""
        iteration = file_model.calls_in(loop)
        if any(c.order < call.order and _steps_its_optimizer(file_model, c, optimizer) for c in iteration):
            return False  # the end of an iteration whose optimizer stepped first
        later = [c for c in iteration if c.order > call.order and _steps_its_optimizer(file_model, c, optimizer)]
        if not any(may_run_after(call.scope, call.node, c.node, file_model.parents) for c in later):
            return False
        return not _deliberate(file_model, loop, call)

    valid = (
        """\
import torch


def train(model, loader, optimizer, criterion, epochs):
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        val_loss = validate(model)
        scheduler.step(val_loss)
""",
        """\
import torch
from torch.optim import lr_scheduler


def train_one_epoch(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def fit(model, loader, criterion, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=10)
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer, criterion)
        scheduler.step()
""",
        """\
import torch
from transformers import get_linear_schedule_with_warmup


def finetune(model, loader, optimizer, total):
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, total)
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
""",
        """\
import torch


def train(model, loader, optimizer, scheduler, criterion, epochs):
    for epoch in range(epochs):
        if epoch > 0:
            scheduler.step()  # the previous epoch's optimizer steps came first
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, criterion, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
    for epoch in range(epochs):
        scheduler.step()  # expect: TL204
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def main(model, loader, optimizer, criterion, epochs):
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        sched.step()  # expect: TL204
        train(model, loader, optimizer, criterion)
""",
        """\
import torch


def finetune(model, loader, optimizer, lr_scheduler):
    for batch in loader:
        lr_scheduler.step()  # expect: TL204
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""",
    )
