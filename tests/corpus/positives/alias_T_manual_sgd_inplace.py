"""TL401 with ``import torch as T``: hand-written SGD outside no_grad.

``w`` and ``b`` are created with ``T.randn``/``T.zeros(..., requires_grad=True)``;
the updates ``w -= ...`` and ``b.sub_(...)`` run with autograd enabled in a
loop that calls backward.  ``w.grad.zero_()`` is fine (it modifies the
gradient buffer, which does not require grad).
"""
import torch as T


def fit(x, y, steps=100, lr=0.05):
    w = T.randn(x.shape[1], 1, requires_grad=True)
    b = T.zeros(1, requires_grad=True)
    for _ in range(steps):
        loss = T.mean((x @ w + b - y) ** 2)
        loss.backward()
        w -= lr * w.grad  # expect: TL401
        b.sub_(lr * b.grad)  # expect: TL401
        w.grad.zero_()
        b.grad.zero_()
    return w, b
