# guards: TL401
"""Hand-written gradient descent with the update under ``torch.no_grad()``.

Correct: ``w`` and ``b`` are leaves with ``requires_grad=True``; their
in-place updates (``-=``) and the in-place ``.grad.zero_()`` calls all run
inside ``with torch.no_grad():``, exactly as the PyTorch "learning PyTorch
with examples" tutorial does.  There is no optimizer, so TL201 does not apply.
"""
import math

import torch

dtype = torch.float
device = torch.device("cpu")


def fit_polynomial(steps=2000, learning_rate=1e-6):
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)

    a = torch.randn((), device=device, dtype=dtype, requires_grad=True)
    b = torch.randn((), device=device, dtype=dtype, requires_grad=True)
    c = torch.randn((), device=device, dtype=dtype, requires_grad=True)
    d = torch.randn((), device=device, dtype=dtype, requires_grad=True)

    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            print(t, loss.item())
        loss.backward()

        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad.zero_()
            b.grad.zero_()
            c.grad.zero_()
            d.grad.zero_()

    return a.item(), b.item(), c.item(), d.item()


def fit_linear(x, y, steps=100, lr=0.1):
    w = torch.zeros(x.size(1), 1, requires_grad=True)
    bias = torch.zeros(1, requires_grad=True)
    for _ in range(steps):
        loss = ((x @ w + bias - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            bias -= lr * bias.grad
            w.grad.zero_()
            bias.grad.zero_()
    return w.detach(), bias.detach()
