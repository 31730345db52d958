# guards: TL202 TL201
"""Gradients written by hand between ``zero_grad()`` and ``step()``.

Correct: evolution strategies and synthetic-gradient methods compute the
gradient themselves and assign it to ``p.grad``; ``zero_grad()`` first clears
the previous update, the assignment sets the new gradient, and ``step()``
applies it. There is no ``backward()`` whose result ``zero_grad`` could wipe.
"""
import torch
import torch.nn as nn


def es_gradient(model, fitness, sigma=0.1, population=32):
    params = nn.utils.parameters_to_vector(model.parameters())
    noise = torch.randn(population, params.numel())
    scores = torch.tensor([fitness(params + sigma * eps) for eps in noise])
    scores = (scores - scores.mean()) / (scores.std() + 1e-8)
    return -(noise * scores[:, None]).mean(0) / sigma


def train(model, fitness, steps=100):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        optimizer.zero_grad()
        flat = es_gradient(model, fitness)
        offset = 0
        for p in model.parameters():
            n = p.numel()
            p.grad = flat[offset:offset + n].view_as(p).clone()
            offset += n
        optimizer.step()


def train_linear(X, Y, steps=100, lr=0.1):
    w = torch.zeros(X.shape[1], requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=lr)
    for step in range(steps):
        optimizer.zero_grad()
        residual = X @ w.detach() - Y
        w.grad = 2 * X.T @ residual / len(Y)
        optimizer.step()
    return w
