# guards: TL401 TL404
"""Leaves and layers bound at module level, written by functions in every correct way.

A script keeps its weights as module state and updates them from functions:
under ``torch.no_grad()`` at the write, in a helper decorated with it or only
ever called under it, through ``.data`` or a detached copy, by ``torch.optim``,
or by rebinding under ``no_grad`` and making the name a leaf again. A name the
module first binds to a plain tensor is written before it ever requires grad,
a comprehension's own ``p`` is not the module's, and a frozen layer's weight
is no longer a leaf that requires grad.
"""
import torch
from torch import nn

W = torch.randn(3, 3, requires_grad=True)
b = torch.zeros(3, requires_grad=True)
head = nn.Linear(3, 3)
frozen = nn.Linear(3, 3)
frozen.weight.requires_grad = False
scale = torch.ones(3)
p = nn.Parameter(torch.ones(3))
optimizer = torch.optim.SGD([W, *head.parameters()], lr=0.1)


@torch.no_grad()
def decay(rate):
    W.mul_(1 - rate)
    head.weight.mul_(1 - rate)


def clip(bound):
    W.clamp_(-bound, bound)
    head.bias.clamp_(-bound, bound)


def shrink(rate):
    W.data.mul_(1 - rate)
    head.weight.data.mul_(1 - rate)


def normalise():
    scale.div_(scale.norm())


def fill_table(value):
    table.fill_(value)


def train_step(x, y, lr=0.1):
    global b
    loss = ((head(x @ W) + b - y) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        b = b - lr * b.grad
        clip(1.0)
    b.requires_grad_()
    decay(1e-4)
    shrink(1e-4)
    normalise()
    frozen.weight.mul_(0.5)
    copy = W.detach().clone()
    copy.add_(1)
    kept = [p.mul_(2) for p in (copy, scale)]
    return loss.item(), kept


normalise()
table = torch.zeros(3)
fill_table(0.5)
table = torch.randn(3, requires_grad=True)
for step in range(100):
    train_step(torch.randn(8, 3), torch.randn(8, 3))
