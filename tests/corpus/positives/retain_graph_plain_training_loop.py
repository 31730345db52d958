"""TL302 with ``import torch as T``: retain_graph=True in a plain training loop.

Only one backward runs per iteration, so keeping the graph is useless.
"""
import torch as T
from torch import nn


def train(model, loader, epochs, lr=0.01):
    optimizer = T.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    loss_fn = nn.MSELoss()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward(retain_graph=True)  # expect: TL302
            optimizer.step()
    return model
