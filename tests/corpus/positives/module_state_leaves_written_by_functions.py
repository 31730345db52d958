"""TL401 and TL404 on module state: a script binds its weights at module level and
updates them from functions, outside ``torch.no_grad()``.

``train_step`` and ``apply_update`` write ``W`` in place while autograd records
(the first raises "a leaf Variable that requires grad is being used in an
in-place operation"); ``clip_head`` clamps the bias of a layer built at module
level. ``fit_bias`` rebinds the global ``b`` to ``b - lr * b.grad``: after the
first call ``b`` is no longer a leaf, its ``.grad`` stays None and the next
call fails, while each step's graph hangs on the next one.
"""
import torch
from torch import nn

W = torch.randn(3, 3, requires_grad=True)
b = torch.zeros(3, requires_grad=True)
head = nn.Linear(3, 3)


def apply_update(lr):
    W.sub_(lr * W.grad)  # expect: TL401
    W.grad.zero_()


def clip_head(bound):
    head.bias.clamp_(-bound, bound)  # expect: TL401


def train_step(x, y, lr=0.1):
    loss = ((head(x @ W) - y) ** 2).mean()
    loss.backward()
    W.add_(W.grad, alpha=-lr)  # expect: TL401
    return loss.item()


def fit_bias(x, y, lr=0.1):
    global b
    loss = ((x @ W.detach() + b - y) ** 2).mean()
    loss.backward()
    b = b - lr * b.grad  # expect: TL404


for step in range(100):
    x, y = torch.randn(8, 3), torch.randn(8, 3)
    print(train_step(x, y))
    apply_update(0.1)
    clip_head(1.0)
    fit_bias(x, y)
