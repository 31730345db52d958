"""TL304: a graph-carrying tensor handed to a meter that sums it across iterations."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set
import libcst as cst

from torchlint.model import FileModel, flow_back
from torchlint.model.expr import bound_paths, referenced_paths
from torchlint.model.sinks import Meters
from torchlint.model.vocab import CONTAINER_METHODS, LOADER_SPELLING, is_loader_name
from torchlint.needs import TRAINS, LoopOver, Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding

_RESETS = frozenset(("reset", "clear", "reset_states", "zero"))


class GraphInMeter(Rule):
    code = "TL304"
    name = "graph-in-meter"
    message = (
        "tensor that carries an autograd graph is passed to a meter that sums it across "
        "iterations, so every iteration's graph stays in memory; pass loss.item() or loss.detach()"
    )
    fix_safety = "safe"
    torch_programs_only = True
    asked_when_parsed = True  # its check costs more than its question where that says no
    # A meter class that adds to its own state, called once per training or data iteration.
    needs = (Text(r"class\s") & Text(r"self\.[\w.]+\s*[-+*]=|self\.[\w.]+\s*=[^=\n]*self\.|"
                                   r"self\.[\w.]+\.(?:%s)\(" % "|".join(sorted(CONTAINER_METHODS)))
             & (TRAINS | LoopOver(is_loader_name, LOADER_SPELLING)))

    docs = """
## What it does
Finds a loss or model output (a tensor that carries an autograd graph) passed
once per iteration to a meter object whose method sums or appends its
argument into `self`, the `AverageMeter` of the PyTorch ImageNet example and
its many copies:

```python
class AverageMeter:
    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
```

The meter's class must be defined in the same file, so that its `update`
can be read; the meter must outlive the iteration (created before the loop,
or kept on `self`).

## Why is this bad
`self.sum += val * n` with a graph tensor makes `self.sum` a tensor whose
graph links to every loss the meter has seen: each iteration's autograd
graph stays reachable until the meter is reset, so memory grows with every
batch, exactly like `total_loss += loss` (TL301). A meter fed training losses
after `backward()` keeps the graphs' nodes, not their saved tensors
(`backward()` freed those): what grows is host memory, not device memory. A
meter fed a metric that nothing backpropagates keeps its saved activations on
the device as well.

Not reported, because they do not keep the graph: `.item()`, `.detach()`
and `float()` values; meters whose `update` calls `.item()` or `float()`
first; TensorBoard's `SummaryWriter.add_scalar` (it converts the value with
`.detach().cpu().numpy()` at once); `wandb.log` (it detaches the tensor and
converts it to a number or array when the row is logged); Lightning's
`self.log` (it detaches); torchmetrics metrics (their updates run with
grad disabled); `print`, f-strings and `logging` (they format at once); a
dict entry overwritten every iteration (`metrics["loss"] = loss` keeps one
graph at most, not one per iteration); an accumulator whose sum a later
`backward()` consumes (gradient accumulation needs those graphs); a meter
created afresh or reset in every iteration. Meters imported from another module
are not reported either: their `update` cannot be read from this file.

## Example
```python
losses = AverageMeter()
for images, target in train_loader:
    loss = criterion(model(images), target)
    losses.update(loss, images.size(0))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Use instead
```python
losses = AverageMeter()
for images, target in train_loader:
    loss = criterion(model(images), target)
    losses.update(loss.item(), images.size(0))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
```

## Fix safety
The fix passes `loss.detach()` instead of `loss`: the same value without its
graph, so the meter's numbers are unchanged. It is safe: a meter is not
something to backpropagate through.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        meters = Meters(file_model)
        if not meters.accumulating:
            return
        for call in file_model.calls:
            if call.receiver is None or call.receiver not in meters.instances:
                continue
            for arg in meters.kept_arguments(call):
                if not file_model.taint(call.scope).carries_graph(arg, call.order):
                    continue
                if self._per_iteration(file_model, call) and not _backpropagated(file_model, call):
                    yield self.report(call.node, fix=_detach(arg))

    @staticmethod
    def _per_iteration(file_model: FileModel, call: CallSite) -> bool:
        """Is the call made once per training or data iteration, into a meter that outlives it?"""
        scope, receiver = call.scope, call.receiver
        assert receiver is not None  # a call on a meter
        loops = [loop for loop in scope.loops if loop.contains(call.order)]
        loops = [loop for loop in loops if file_model.loop_role(loop).trains or file_model.loop_role(loop).data]
        if not loops:
            # a training step method called once per iteration by a loop we cannot see
            hook = scope.name == "training_step" or bool(file_model.backwards_in(scope))
            return scope.class_name is not None and receiver.startswith("self.") and hook
        inner = max(loops, key=lambda loop: loop.start)
        for a in scope.assignments:
            if inner.contains(a.order) and receiver in (p for t in a.targets for p in bound_paths(t)):
                return False  # a fresh meter per iteration
        return not any(
            inner.contains(c.order) and c.receiver == receiver and c.method in _RESETS for c in scope.calls
        )

    valid = (
        """\
import torch


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def train(model, loader, optimizer, criterion):
    losses = AverageMeter()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
""",
        """\
import torch


class Last:
    def update(self, val):
        self.val = val


def train(model, loader, optimizer, criterion):
    last = Last()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        last.update(loss)
""",
    )
    invalid = (
        """\
import torch


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def train(model, loader, optimizer, criterion):
    losses = AverageMeter()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.update(loss, x.size(0))  # expect: TL304
""",
        """\
import torch


class Meter:
    def __init__(self):
        self.values = []

    def add(self, value):
        self.values.append(value)


def train(model, loader, optimizer, criterion):
    meter = Meter()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        meter.add(loss)  # expect: TL304
""",
    )


def _backpropagated(file_model: FileModel, call: CallSite) -> bool:
    """A backward() through what the object holds (``acc.total.backward()``): an
    accumulator of losses for one backward pass, which needs the graphs."""
    paths: Set[str] = set()
    for c in call.scope.calls:
        if file_model.is_differentiation(c):
            paths.update(referenced_paths(c.node))
    receiver = call.receiver
    assert receiver is not None  # a call on a meter
    return any(p == receiver or p.startswith(receiver + ".") for p in flow_back(paths, call.scope))


def _detach(arg: cst.BaseExpression) -> Fix:
    value = arg
    if not isinstance(arg, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not arg.lpar:
        value = arg.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    detached = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("detach")))
    return Fix("pass a detached tensor to the meter", edits=((arg, detached),))
