# guards: TL401
"""Leaves handed to update helpers, from a function that backpropagates through another.

``fit`` records (its loss goes to ``backprop``, which calls ``backward()`` in
its caller's grad mode), so the helpers it calls are judged in its context.
Each is correct there: ``update`` writes the leaf in place but is called only
under ``torch.no_grad()``, ``update_decorated`` is decorated with it,
``update_data`` writes through ``.data``, and ``perturb`` writes a detached copy.
"""
import torch


def backprop(loss):
    loss.backward()


def update(w, lr):
    w -= lr * w.grad


@torch.no_grad()
def update_decorated(w, lr):
    w -= lr * w.grad


def update_data(w, lr):
    w.data -= lr * w.grad.data
    w.data.add_(w.grad, alpha=-lr)


def perturb(w):
    noisy = w.detach().clone()
    noisy.add_(0.1)
    return noisy


def fit(x, y, steps=100, lr=0.1):
    w = torch.randn(3, requires_grad=True)
    v = torch.randn(3, requires_grad=True)
    for _ in range(steps):
        loss = ((x @ w + x @ v - y) ** 2).mean()
        backprop(loss)
        with torch.no_grad():
            update(w, lr)
        update_decorated(v, lr)
        update_data(v, lr)
        w.grad = None
        v.grad = None
    return w, v, perturb(w)
