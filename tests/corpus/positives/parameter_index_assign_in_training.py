"""TL401: item assignment on an ``nn.Parameter`` in a training loop.

``w[0] = 0`` (meant to keep the padding row at zero) modifies a leaf that
requires grad in place, with autograd enabled, in a loop that calls backward.
"""
import torch
from torch import nn


def train(x, targets, steps=100, lr=0.1):
    w = nn.Parameter(torch.randn(16, 8) * 0.1)
    optimizer = torch.optim.SGD([w], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        emb = w[x]
        loss = (emb.sum(dim=(1, 2)) - targets).pow(2).mean()
        loss.backward()
        optimizer.step()
        w[0] = 0  # expect: TL401
    return w
