"""A loop over a literal tuple of tensors stands for each of them.

A linear-regression script made by hand: the weights start as plain
tensors and are switched on with ``p.requires_grad = True`` in a loop over
``(w, b)``; the update then writes each of them in place, outside
``no_grad``, which raises on the first one. Two parameters meant to be
frozen in a loop get a misspelled flag, so nothing is frozen.
"""
import torch
from torch import nn

w = torch.randn(3, 1)
b = torch.zeros(1)
for p in (w, b):
    p.requires_grad = True

scale = nn.Parameter(torch.ones(1))
shift = nn.Parameter(torch.zeros(1))
for frozen in [scale, shift]:
    frozen.require_grad = False  # expect: TL506

x = torch.randn(64, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
for epoch in range(100):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    for p in (w, b):
        p -= 0.1 * p.grad  # expect: TL401
        p.grad.zero_()
