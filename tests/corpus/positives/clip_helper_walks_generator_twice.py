"""A hand-written clip that walks the parameters it is given twice, given a generator.

``clip_gradients`` sums the squared gradient norms over ``parameters``, then
scales every gradient in a second loop over the same name. Called with
``model.parameters()`` (or a stored ``chain`` of two models' parameters), the
first loop runs the generator to its end: the second loop sees nothing, and
no gradient is ever scaled. The method of a trainer class does the same,
with torch's clip as the second walk.
"""
import itertools

import torch
import torch.nn.functional as F


def clip_gradients(parameters, max_norm):
    total = 0.0
    for p in parameters:
        if p.grad is not None:
            total += p.grad.data.norm(2).item() ** 2
    total = total ** 0.5
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for p in parameters:
            if p.grad is not None:
                p.grad.data.mul_(coef)
    return total


def train(model, encoder, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        F.mse_loss(model(encoder(x)), y).backward()
        clip_gradients(model.parameters(), 1.0)  # expect: TL205
        both = itertools.chain(model.parameters(), encoder.parameters())
        clip_gradients(both, max_norm=1.0)  # expect: TL205
        optimizer.step()


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def log_and_clip(self, params, max_norm):
        norms = [p.grad.norm() for p in params if p.grad is not None]
        print(torch.stack(norms).max())
        torch.nn.utils.clip_grad_norm_(params, max_norm)

    def step(self, x, y):
        self.optimizer.zero_grad()
        F.mse_loss(self.model(x), y).backward()
        self.log_and_clip(self.model.parameters(), 1.0)  # expect: TL205
        self.optimizer.step()
