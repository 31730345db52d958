"""TL902: a shuffling DistributedSampler whose ``set_epoch`` is never called: every epoch the same order."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.distributed import (
    DATALOADERS, DISTRIBUTED_SAMPLERS, argument, assigned_paths, forwards_kwargs, loader_bindings, loops_over,
    runs_repeatedly,
)
from torchlint.model.expr import keyword, literal_bool, referenced_paths
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Loop
    from torchlint.rule import Finding

# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
_SHUFFLE_AT = 3


def _shuffles(call: cst.Call) -> bool:
    """Shuffles for sure: ``shuffle`` left at its default (True) or a literal True."""
    arg = argument(call, "shuffle", _SHUFFLE_AT)
    return arg is None or literal_bool(arg.value) is True


def _loops_of(file_model: FileModel, sampler: CallSite) -> List[Loop]:
    """The loops over the loaders that draw from ``sampler``: built with it inline
    (``sampler=DistributedSampler(ds)``) or through a name bound to it, also inside a
    ``BatchSampler``; iterated where they are built (``for x, y in DataLoader(...)``) or
    through the names they are bound to."""
    names = set(assigned_paths(sampler))
    out: List[Loop] = []
    for call in sampler.scope.calls:
        if file_model.qualify(call) not in DATALOADERS:
            continue
        for name in ("sampler", "batch_sampler"):
            value = keyword(call.node, name)
            if value is None:
                continue
            if value is sampler.node or sampler.node in _calls_under(value) or names & set(referenced_paths(value)):
                loop = call.site.loop
                if loop is not None and loop.node is call.site.stmt:
                    out.append(loop)  # the loop's own header builds the loader
                out.extend(loop for scope, path in loader_bindings(file_model, call)
                           for loop in loops_over(file_model, scope, path))
    return out


def _calls_under(node: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    if isinstance(node, cst.Call):
        for arg in node.args:
            yield arg.value
            yield from _calls_under(arg.value)


class SamplerSetEpochMissing(Rule):
    code = "TL902"
    name = "sampler-set-epoch-missing"
    message = ("DistributedSampler shuffles with the same seed every epoch unless set_epoch is called: every epoch "
               "visits the samples in the same order; call sampler.set_epoch(epoch) at the start of each epoch")
    torch_programs_only = True
    needs = Text(r"DistributedSampler")
    docs = """
## What it does
Finds `torch.utils.data.DistributedSampler(...)` calls that shuffle (the
default, or `shuffle=True`) whose loader a loop of the file iterates more than
once (inside an epoch loop, or in a function that a loop calls), in a file
that never calls `set_epoch`. The finding is on the sampler.

Not reported: samplers with `shuffle=False` or a shuffle flag the file cannot
read, any file that calls `.set_epoch(...)` on anything (the sampler, the
loader's `.sampler`, a batch sampler), loaders iterated once, and loaders handed
to code outside the file (which may call `set_epoch` itself).

## Why is this bad
`DistributedSampler` shuffles with a generator seeded by `seed + epoch`, and
`epoch` only changes when `set_epoch` is called. Without it every epoch
shuffles with the same seed: each rank sees its samples in the same order, in
the same batches, epoch after epoch. Shuffling is there to decorrelate
successive epochs; here it happens once, at the start, and never again, which
costs generalisation much as `shuffle=False` would.

## Example
```python
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=64, sampler=sampler)
for epoch in range(epochs):
    for x, y in loader:
        ...
```

## Use instead
```python
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, batch_size=64, sampler=sampler)
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    for x, y in loader:
        ...
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if any(call.method == "set_epoch" for call in file_model.calls):
            return
        for call in file_model.calls:
            if file_model.qualify(call) not in DISTRIBUTED_SAMPLERS:
                continue
            if forwards_kwargs(call.node) or not _shuffles(call.node):
                continue
            if call.site.loop is not None and argument(call.node, "seed", 4) is not None:
                continue  # a new sampler per epoch, seeded by the loop
            if any(runs_repeatedly(file_model, loop) for loop in _loops_of(file_model, call)):
                yield self.report(call.node)

    valid = (
        """\
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, val_set, optimizer, epochs):
    train_loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
    val_loader = DataLoader(val_set, batch_size=32, sampler=DistributedSampler(val_set, shuffle=False))
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
        for x, y in val_loader:
            print(model(x).sum().item())
""",
        """\
from torch.utils.data import DataLoader, DistributedSampler


def evaluate(model, dataset):
    loader = DataLoader(dataset, batch_size=32, sampler=DistributedSampler(dataset))
    return sum(model(x).sum().item() for x, y in loader)


def one_pass(model, dataset):
    sampler = DistributedSampler(dataset)
    for x, y in DataLoader(dataset, sampler=sampler):
        model(x).sum().backward()
""",
    )
    invalid = (
        """\
import torch
from torch.utils.data import DataLoader, DistributedSampler


def train(model, dataset, optimizer, epochs):
    sampler = DistributedSampler(dataset, shuffle=True)  # expect: TL902
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
""",
        """\
import torch.utils.data as data


def run_epoch(model, batches, optimizer):
    for x, y in batches:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def main(model, dataset, optimizer):
    loader = data.DataLoader(dataset, batch_size=16, sampler=data.DistributedSampler(dataset))  # expect: TL902
    for epoch in range(90):
        run_epoch(model, loader, optimizer)
""",
    )
