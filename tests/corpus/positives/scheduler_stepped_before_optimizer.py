"""Variants of TL204: a learning-rate scheduler stepped before the optimizer in the same iteration.

A trainer class that steps ``self.scheduler`` before its epoch helper, the
pre-1.1 epoch loop behind ``if scheduler is not None``, a scheduler known
only by its name before ``scaler.step(optimizer)``, and a scheduler class
derived from ``lr_scheduler._LRScheduler``.
"""
import torch
from torch.optim import lr_scheduler


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)
        self.scheduler = lr_scheduler.MultiStepLR(self.optimizer, [30, 60])

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            self.scheduler.step()  # expect: TL204
            self.train_epoch(loader)

    def train_epoch(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            self.model(x).mean().backward()
            self.optimizer.step()


def old_style(model, loader, criterion, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    scheduler = lr_scheduler.ExponentialLR(optimizer, 0.9)
    for epoch in range(epochs):
        if scheduler is not None:
            scheduler.step()  # expect: TL204
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()


def amp(model, loader, optimizer, scaler, sched):
    for x in loader:
        sched.step()  # expect: TL204
        optimizer.zero_grad()
        scaler.scale(model(x).mean()).backward()
        scaler.step(optimizer)
        scaler.update()


class MyLR(lr_scheduler._LRScheduler):
    def get_lr(self):
        return self.base_lrs


def custom_torch_subclass(model, loader, optimizer):
    warm = MyLR(optimizer)
    for x in loader:
        warm.step()  # expect: TL204
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()
