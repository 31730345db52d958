"""TL302 and TL401 through arguments: the loop hands a fresh loss to a helper that
keeps its graph, and a leaf to a helper that updates it in place.

``backprop`` calls ``backward(retain_graph=True)`` on the loss it is handed;
nothing else in the iteration backpropagates through it, so each iteration's
graph stays alive into the next. ``update`` writes the leaf ``w`` it is handed
in place with grad enabled, which raises at the first call.
"""
import torch


def backprop(loss):
    loss.backward(retain_graph=True)  # expect: TL302


def update(w, lr):
    w -= lr * w.grad  # expect: TL401
    w.grad.zero_()


def fit(x, y, steps=100, lr=0.1):
    w = torch.randn(3, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=lr)
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        backprop(loss)
        optimizer.step()
        update(w, lr)
    return w
