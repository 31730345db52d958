# guards: TL401
"""Exponential moving average of model weights, updated in place under no_grad.

Correct: ``ModelEMA.update`` is decorated with ``@torch.no_grad()``, so the
in-place ``mul_``/``add_``/``copy_`` on parameters and buffers of the EMA
copy (and the reads of the live model's parameters) are not tracked by
autograd.  The EMA model's parameters do not require grad anyway.  The
training loop calls ``ema.update(model)`` after ``optimizer.step()``.
"""
import copy

import torch
from torch import nn


class ModelEMA:
    def __init__(self, model, decay=0.9999):
        self.ema = copy.deepcopy(model).eval()
        self.decay = decay
        for p in self.ema.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for ema_p, p in zip(self.ema.parameters(), model.parameters()):
            ema_p.mul_(self.decay).add_(p, alpha=1.0 - self.decay)
        for ema_b, b in zip(self.ema.buffers(), model.buffers()):
            ema_b.copy_(b)


def train(model, loader, optimizer, epochs, device):
    ema = ModelEMA(model)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            ema.update(model)
    return ema.ema
