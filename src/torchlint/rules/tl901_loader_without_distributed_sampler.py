"""TL901: a training DataLoader under DDP/FSDP without a DistributedSampler: every rank reads the whole dataset."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Set

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.distributed import (
    DATALOADERS, argument, forwards_kwargs, handed_to_calls, is_data_parallel, loader_bindings, loops_over,
    replaced_through_call,
)
from torchlint.model.expr import dotted, identifiers, keyword, positional
from torchlint.model.vocab import last_name
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
_SAMPLER_AT, _BATCH_SAMPLER_AT = 3, 4
# A dataset read with these words is split among the ranks by hand (``Subset(ds, range(rank,
# n, world_size))``, ``ds.shard(num_shards=world_size, index=rank)``, webdataset's
# ``split_by_node``), or is a stream that splits itself; no sampler is needed.
_SHARD_WORDS = frozenset(
    "rank local_rank global_rank world_size get_rank get_world_size num_replicas shard num_shards "
    "split_dataset_by_node split_by_node nodesplitter IterableDataset".split())
# Library calls that take over a loader and shard it themselves (Accelerate, Lightning Fabric).
_TAKES_OVER = frozenset(("prepare", "prepare_data_loader", "setup_dataloaders"))


def has_sampler(call: cst.Call) -> bool:
    """A ``sampler`` or ``batch_sampler`` other than a literal None."""
    for name, index in (("sampler", _SAMPLER_AT), ("batch_sampler", _BATCH_SAMPLER_AT)):
        arg = argument(call, name, index)
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return True
    return False


def _sharded_by_hand(file_model: FileModel, call: CallSite) -> bool:
    """Is the dataset split among ranks where it is built (or a stream that splits itself)?"""
    dataset = positional(call.node, 0) or keyword(call.node, "dataset")
    if dataset is None:
        return True  # ``DataLoader(**options)``-like: cannot tell
    words: Set[str] = set(identifiers(dataset))
    for a in call.scope.assignments:
        if a.order < call.order and a.value is not None and any(dotted(t) in words for t in a.targets):
            words.update(identifiers(a.value))
    for name in list(words):
        words.update(map(last_name, file_model.class_bases.get(name, ())))  # a dataset class of the file: its bases
    return not words.isdisjoint(_SHARD_WORDS)


class LoaderWithoutDistributedSampler(Rule):
    code = "TL901"
    name = "loader-without-distributed-sampler"
    message = ("DataLoader feeds DDP/FSDP training without a DistributedSampler: every rank reads the whole "
               "dataset, so ranks train on the same samples and each epoch is world_size times too long; "
               "pass sampler=DistributedSampler(dataset)")
    torch_programs_only = True
    needs = Text(r"DataLoader") & Text(r"DistributedDataParallel|FullyShardedDataParallel|fully_shard")
    docs = """
## What it does
In a file that wraps a model for data-parallel training
(`DistributedDataParallel(model)`, `FullyShardedDataParallel(model)`,
`fully_shard(model)`: each needs an initialised process group, so the file
runs as one rank of several), finds `torch.utils.data.DataLoader(...)` calls
with neither `sampler` nor `batch_sampler` whose loader a training loop of
the file iterates (a loop that calls `backward()` or steps an optimizer,
itself or through the file's helpers), directly or through the functions and
classes of the file it is handed to.

Not reported: loaders only evaluation iterates (every rank evaluating the
whole validation set is wasteful, not wrong), a name that the file binds to a
loader with a sampler in another branch (`if distributed: ... else: ...`),
datasets split by rank where they are built (`rank`, `world_size`, `shard`,
`split_by_node`, an `IterableDataset`), loaders handed to a library that gives
back its own (`loader = fabric.setup_dataloaders(loader)`, `model, opt, loader =
accelerator.prepare(model, opt, loader)`, Opacus' `make_private`), and loaders a
training loop of this file never iterates (handed to another module).

## Why is this bad
A `DataLoader` knows nothing of the process group: on every rank it iterates
the whole dataset. Under DDP each rank then trains on every sample, so one
epoch processes the dataset `world_size` times over, and when the ranks seed
alike (or do not shuffle) they draw the very same batches: the gradients DDP
averages are identical, and the extra GPUs add nothing but cost. A
`DistributedSampler` gives each rank a disjoint `1/world_size` share.

## Example
```python
dist.init_process_group("nccl")
model = DistributedDataParallel(Net().to(rank), device_ids=[rank])
loader = DataLoader(dataset, batch_size=64, shuffle=True)
for epoch in range(epochs):
    for x, y in loader:
        ...
```

## Use instead
```python
dist.init_process_group("nccl")
model = DistributedDataParallel(Net().to(rank), device_ids=[rank])
sampler = DistributedSampler(dataset, shuffle=True)
loader = DataLoader(dataset, batch_size=64, sampler=sampler)
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    for x, y in loader:
        ...
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not is_data_parallel(file_model):
            return
        loaders = [c for c in file_model.calls if file_model.qualify(c) in DATALOADERS]
        with_sampler = {(id(scope), path) for c in loaders if has_sampler(c.node)
                        for scope, path in loader_bindings(file_model, c)}
        for call in loaders:
            if has_sampler(call.node) or forwards_kwargs(call.node) or _sharded_by_hand(file_model, call):
                continue
            bindings = loader_bindings(file_model, call)
            if any((id(scope), path) in with_sampler for scope, path in bindings):
                continue  # the same name holds a sampled loader on the distributed branch
            if any(replaced_through_call(file_model, scope, path) or any(
                    c.method in _TAKES_OVER for c in handed_to_calls(file_model, scope, path))
                   for scope, path in bindings):
                continue  # a library takes the loader over and shards it itself
            if any(file_model.loop_role(loop).trains for scope, path in bindings
                   for loop in loops_over(file_model, scope, path)):
                yield self.report(call.node)

    valid = (
        """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def main(rank, world_size, dataset, val_set, net, epochs):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(net)
    sampler = DistributedSampler(dataset) if world_size > 1 else None
    loader = DataLoader(dataset, batch_size=32, shuffle=sampler is None, sampler=sampler)
    val_loader = DataLoader(val_set, batch_size=256)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            for x, y in val_loader:
                print(model(x).argmax(1).eq(y).float().mean())
""",
        """\
import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Subset


def train(net, dataset, rank, world_size, distributed):
    model = DistributedDataParallel(net)
    shard = Subset(dataset, range(rank, len(dataset), world_size))
    loader = DataLoader(shard, batch_size=32, shuffle=True)
    if distributed:
        batches = DataLoader(dataset, batch_size=32, sampler=torch.utils.data.DistributedSampler(dataset))
    else:
        batches = DataLoader(dataset, batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for source in (loader, batches):
        for x, y in source:
            optimizer.zero_grad()
            model(x).sum().backward()
            optimizer.step()
""",
    )
    invalid = (
        """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


def main(rank, world_size, dataset, net, epochs):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(net.to(rank), device_ids=[rank])
    loader = DataLoader(dataset, batch_size=32, shuffle=True)  # expect: TL901
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x.to(rank)), y.to(rank)).backward()
            optimizer.step()
""",
        """\
import torch
from torch import nn
from torch.utils.data import DataLoader


def prepare_dataloader(dataset, batch_size):
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, pin_memory=True)  # expect: TL901


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id):
        self.model = nn.parallel.DistributedDataParallel(model, device_ids=[gpu_id])
        self.train_data = train_data
        self.optimizer = optimizer

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        nn.functional.cross_entropy(self.model(source), targets).backward()
        self.optimizer.step()

    def train(self, epochs):
        for epoch in range(epochs):
            for source, targets in self.train_data:
                self._run_batch(source, targets)


def main(rank, dataset, model, optimizer):
    train_data = prepare_dataloader(dataset, 32)
    Trainer(model, train_data, optimizer, rank).train(10)
""",
    )
