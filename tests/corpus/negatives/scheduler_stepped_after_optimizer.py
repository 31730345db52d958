# guards: TL204
"""Learning-rate schedulers stepped in the right order, or not schedulers at all.

``ReduceLROnPlateau.step(metric)`` after validation, a per-batch ``OneCycleLR``
after the optimizer, ``scheduler.step()`` before a training helper imported
from another module (not visible), a step guarded by the epoch count, a
diffusers noise scheduler and a hand-written schedule object (not torch
schedulers), a GAN whose two schedulers each follow their optimizer, a
per-epoch step after training and validation, a schedule demo whose
optimizer steps first, and ultralytics' deliberate order (``last_epoch``
shifted by hand, the warning silenced).
"""
import warnings

import torch
from torch.optim.lr_scheduler import ReduceLROnPlateau, OneCycleLR, _LRScheduler
from diffusers import DDPMScheduler
from engine import train_one_epoch


def plateau(model, loader, optimizer, criterion, validate):
    scheduler = ReduceLROnPlateau(optimizer, "min")
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        scheduler.step(validate(model))


def per_batch(model, loader, optimizer, criterion):
    scheduler = OneCycleLR(optimizer, max_lr=0.1, total_steps=100)
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        scheduler.step()


def imported_helper(model, loader, optimizer, sched):
    for epoch in range(10):
        sched.step()
        train_one_epoch(model, loader, optimizer)


def guarded(model, loader, optimizer, lr_scheduler, criterion, warmup):
    for epoch in range(10):
        if epoch >= warmup:
            lr_scheduler.step()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()


def diffusion(unet, noise_scheduler, loader, optimizer):
    for batch in loader:
        noise_scheduler.step()
        loss = unet(batch).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def custom_object(model, loader, optimizer, criterion):
    scheduler = MyWarmup(optimizer)
    for x, y in loader:
        scheduler.step()
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def gan_two_schedulers(G, D, opt_g, opt_d, loader):
    sched_g = torch.optim.lr_scheduler.StepLR(opt_g, 10)
    sched_d = torch.optim.lr_scheduler.StepLR(opt_d, 10)
    for epoch in range(10):
        for real in loader:
            opt_d.zero_grad()
            D(real).mean().backward()
            opt_d.step()
            sched_d.step()
            opt_g.zero_grad()
            D(G(real)).mean().backward()
            opt_g.step()
        sched_g.step()


def validate_then_step(model, loader, optimizer, scheduler, evaluate):
    for epoch in range(10):
        train(model, loader, optimizer)
        evaluate(model)
        scheduler.step()


def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()


def demo_schedule(optimizer):
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2)
    lrs = []
    for epoch in range(10):
        optimizer.step()
        lrs.append(scheduler.get_last_lr())
        scheduler.step()


class Trainer:
    """ultralytics' order: the scheduler steps at the top of each epoch on purpose, its
    position shifted once (``last_epoch = start_epoch - 1``) and PyTorch's warning silenced."""

    def __init__(self, model, start_epoch):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda e: 0.9 ** e)
        self.scheduler.last_epoch = start_epoch - 1  # do not move

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            self.scheduler.step()
            self.train_epoch(loader)

    def fit_quietly(self, loader, epochs, sched):
        for epoch in range(epochs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # 'Detected lr_scheduler.step() before optimizer.step()'
                sched.step()
            self.train_epoch(loader)

    def train_epoch(self, loader):
        for x in loader:
            self.optimizer.zero_grad()
            self.model(x).mean().backward()
            self.optimizer.step()
