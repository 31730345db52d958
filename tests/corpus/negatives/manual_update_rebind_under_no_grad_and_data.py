# guards: TL401 TL404
"""Hand-written gradient descent, written the ways that keep leaves leaves.

Correct: the rebinding update runs under ``torch.no_grad()`` and the new
tensor is made a leaf again with ``requires_grad_()``; the legacy form
updates ``.data``; the in-place form runs under ``no_grad``; a rebinding
wrapped in ``.detach().requires_grad_()`` starts a fresh leaf each step.
"""
import torch


def fit_rebind(x, y, steps, lr=0.05):
    w = torch.randn(x.shape[1], 1, requires_grad=True)
    for _ in range(steps):
        loss = (x @ w - y).pow(2).mean()
        loss.backward()
        with torch.no_grad():
            w = w - lr * w.grad
        w.requires_grad_()
    return w


def fit_data(x, y, steps, lr=0.05):
    w = torch.randn(x.shape[1], 1, requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for _ in range(steps):
        loss = (x @ w + b - y).pow(2).mean()
        loss.backward()
        w.data = w.data - lr * w.grad.data
        b.data.sub_(lr * b.grad.data)
        w.grad.data.zero_()
        b.grad.data.zero_()
    return w, b


def fit_detached(x, y, steps, lr=0.05):
    w = torch.randn(x.shape[1], 1, requires_grad=True)
    for _ in range(steps):
        loss = (x @ w - y).pow(2).mean()
        loss.backward()
        w = (w - lr * w.grad).detach().requires_grad_(True)
    return w


def fit_inplace(model, loader, lr=0.01):
    for inputs, targets in loader:
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
