"""TL904: training forward passes that go around the DDP/FSDP wrapper (``model.module(x)``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, Optional

from torchlint.model import FileModel, GradMode
from torchlint.model.distributed import wraps
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.distributed import Wrap
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding

_SHARDED_MESSAGE = ("forward() called on a fully_shard module skips the FSDP hooks that gather its sharded "
                    "parameters before the forward and reduce gradients after backward (torch raises on the "
                    "mixed DTensor and Tensor); call the module itself: model(x)")


def _bypassed(call: CallSite, wrapped: Dict[str, str], sharded: Dict[str, Wrap]) -> Optional[str]:
    """The wrapper kind a call goes around: ``ddp``/``fsdp`` for ``wrapper.module(x)`` and
    ``wrapper.module.forward(x)``, ``fully_shard`` for ``model.forward(x)`` after
    ``fully_shard(model)``."""
    callee = call.callee or ""
    for suffix in (".module", ".module.forward"):
        if callee.endswith(suffix) and callee[: -len(suffix)] in wrapped:
            return wrapped[callee[: -len(suffix)]]
    if callee.endswith(".forward"):
        owner = callee[: -len(".forward")]
        wrap = sharded.get(owner)
        if wrap is not None and (call.scope is not wrap.call.scope or call.order > wrap.call.order):
            return "fully_shard"  # after the sharding, or in another function
    return None


def _trains(file_model: FileModel, call: CallSite) -> bool:
    """Does the forward feed a backward: in a loop that trains, or in a function that
    calls backward itself?"""
    if call.site.loop is not None:
        return file_model.loop_role(call.site.loop).trains
    return bool(file_model.backwards_in(call.scope))


class WrapperBypassed(Rule):
    code = "TL904"
    name = "wrapper-bypassed"
    message = ("training forward through model.module() skips DistributedDataParallel's forward, which prepares "
               "the gradient all-reduce: this rank's gradients are not averaged with the others' and the replicas "
               "drift apart; call the wrapper itself: model(x)")
    torch_programs_only = True
    needs = Text(r"\.\s*(?:module|forward)\b") & Text(r"DistributedDataParallel|FullyShardedDataParallel|fully_shard")
    docs = """
## What it does
Finds forward passes that go around a data-parallel wrapper in training
code (where the call runs with grad on, in a loop that calls `backward()` or
steps an optimizer, or in a function that calls `backward()`):

- `model.module(x)` and `model.module.forward(x)`, where the file binds
  `model` to `DistributedDataParallel(...)` or `FullyShardedDataParallel(...)`;
- `model.forward(x)` after `fully_shard(model)`.

Not reported: such calls under `no_grad` (evaluation, an EMA or teacher
model read without gradients), outside training code, `model.forward(x)`
on a `DistributedDataParallel` or `FullyShardedDataParallel` wrapper (their own
`forward` runs the wrapper's work), and other methods reached through
`.module` (`model.module.state_dict()`, `model.module.generate(...)`).

## Why is this bad
DDP's work happens in its `forward`: it marks the pass so that backward's
gradient hooks all-reduce the gradients across ranks. Calling the wrapped
module directly runs the same layers without that, so each rank keeps its own
gradients, takes its own optimizer step, and the replicas silently drift apart;
the saved model depends on which rank saved it. `fully_shard` works through
forward hooks of the module: `model.forward(x)` skips them, so the parameters
are still sharded `DTensor`s when the layers run and torch raises (mixed
`torch.Tensor` and `DTensor`). `FullyShardedDataParallel` gathers its sharded
parameters in its own `forward`; its wrapped module, called directly, runs
without that gather and without the gradient reduction after backward (not
measured here: on torch 2.13 FSDP1 needs an accelerator).

## Example
```python
model = DistributedDataParallel(net, device_ids=[rank])
for x, y in loader:
    optimizer.zero_grad()
    loss = loss_fn(model.module(x), y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
model = DistributedDataParallel(net, device_ids=[rank])
for x, y in loader:
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        found = wraps(file_model)
        wrapped = {path: w.kind for w in found if w.kind in ("ddp", "fsdp") for path in w.bound}
        sharded = {path: w for w in found if w.kind == "fully_shard" for path in w.bound}
        if not wrapped and not sharded:
            return
        for call in file_model.calls:
            kind = _bypassed(call, wrapped, sharded)
            if kind is None or file_model.grad_at(call.site) is GradMode.NO_GRAD or not _trains(file_model, call):
                continue
            if kind == "fully_shard":
                yield self.report(call.node, message=_SHARDED_MESSAGE)
            elif kind == "fsdp":
                yield self.report(call.node, message=self.message.replace(
                    "DistributedDataParallel's forward, which prepares the gradient all-reduce",
                    "FullyShardedDataParallel's forward, which gathers the sharded parameters and reduces the "
                    "gradients"))
            else:
                yield self.report(call.node)

    valid = (
        """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def train(net, teacher, loader, optimizer, rank):
    model = DDP(net, device_ids=[rank])
    teacher = DDP(teacher, device_ids=[rank])
    for x, y in loader:
        with torch.no_grad():
            target = teacher.module(x)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model.forward(x), target)
        loss.backward()
        optimizer.step()
    torch.save(model.module.state_dict(), "model.pt")


def evaluate(model, loader):
    model = DDP(model)
    return [model.module(x).argmax(1) for x, _ in loader]
""",
        """\
import torch
from torch.distributed.fsdp import fully_shard


def train(model, loader, optimizer):
    fully_shard(model)
    for x, y in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch
from torch import nn


def train(net, loader, optimizer, rank):
    model = nn.parallel.DistributedDataParallel(net.to(rank), device_ids=[rank])
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model.module(x), y)  # expect: TL904
        loss.backward()
        optimizer.step()
""",
        """\
import torch
from torch.distributed.fsdp import fully_shard


def step(model, x):
    fully_shard(model)
    model.forward(x).sum().backward()  # expect: TL904
""",
    )
