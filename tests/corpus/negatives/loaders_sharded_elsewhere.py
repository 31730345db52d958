# guards: TL901 TL902
"""Loaders under DDP that need no ``DistributedSampler`` of their own.

Correct: Accelerate's ``prepare`` hands back a loader sharded across the
processes; a dataset split by rank by hand (``Subset`` of every
``world_size``-th sample); a stream that splits itself (an
``IterableDataset`` reading its own shard); a sampler rebuilt every epoch
with the epoch as its seed, in place of ``set_epoch``.
"""
import torch
from accelerate import Accelerator
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, IterableDataset, Subset


class ShardStream(IterableDataset):
    def __init__(self, files, rank, world_size):
        self.files = files[rank::world_size]

    def __iter__(self):
        for name in self.files:
            yield from torch.load(name, weights_only=True)


def with_accelerate(model, dataset, epochs):
    accelerator = Accelerator()
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(DistributedDataParallel(model), optimizer, loader)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            accelerator.backward(torch.nn.functional.mse_loss(model(x), y))
            optimizer.step()


def by_hand(model, dataset, files, rank, world_size, epochs):
    model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    shard = Subset(dataset, range(rank, len(dataset), world_size))
    loaders = [DataLoader(shard, batch_size=32, shuffle=True),
               DataLoader(ShardStream(files, rank, world_size), batch_size=32)]
    for epoch in range(epochs):
        sampler = DistributedSampler(dataset, seed=epoch)
        for source in (*loaders, DataLoader(dataset, batch_size=32, sampler=sampler)):
            for x, y in source:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
