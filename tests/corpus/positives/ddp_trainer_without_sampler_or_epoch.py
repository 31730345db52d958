"""DDP tutorials gone wrong: a Trainer class whose loader has no sampler, and one that never sets the epoch.

``prepare_dataloader`` builds the loader the ``Trainer`` iterates through
``self.train_data``; ``shuffled`` draws from a ``DistributedSampler`` that a
loop over epochs never tells the epoch.
"""
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler


def prepare_dataloader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, pin_memory=True, shuffle=True)  # expect: TL901


def shuffled(dataset, batch_size):
    sampler = DistributedSampler(dataset)  # expect: TL902
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


class Trainer:
    def __init__(self, model, train_data, optimizer, gpu_id):
        self.gpu_id = gpu_id
        self.model = DDP(model.to(gpu_id), device_ids=[gpu_id])
        self.train_data = train_data
        self.optimizer = optimizer

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        F.cross_entropy(self.model(source), targets).backward()
        self.optimizer.step()

    def _run_epoch(self, epoch):
        for source, targets in self.train_data:
            self._run_batch(source.to(self.gpu_id), targets.to(self.gpu_id))

    def train(self, max_epochs):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)


def main(rank, dataset, model, optimizer, epochs):
    Trainer(model, prepare_dataloader(dataset, 32), optimizer, rank).train(epochs)
    loader = shuffled(dataset, 32)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
