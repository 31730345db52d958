# guards: TL205 TL206
"""A hand-written loss scaler with GradScaler's method names.

Correct for this rule's purpose: ``StaticScaler`` is this file's own class.
Its ``step`` unscales and steps by itself and it keeps no per-step state,
so calling ``scaler.step(optimizer)`` every iteration without an
``update()`` is how it is meant to be used. Only torch's GradScaler needs
``update()`` between steps; a scaler this file defines is not one.
"""
import torch


class StaticScaler:
    def __init__(self, factor=1024.0):
        self.factor = factor

    def scale(self, loss):
        return loss * self.factor

    def step(self, optimizer):
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.grad /= self.factor
        optimizer.step()


def train_epoch(model, loader, optimizer, criterion, scaler):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        optimizer.zero_grad()


def main(model, loader, criterion):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    train_epoch(model, loader, optimizer, criterion, StaticScaler())
