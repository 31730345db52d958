"""TL302 through an argument: the loop builds a loss and hands it to a step helper
that backpropagates with ``retain_graph=True``.

The helper's backward differentiates whatever its caller hands it, so only the
call site says whether another backward needs the graph: here nothing else in
the iteration backpropagates, each loss is built afresh, and the optimizer
steps, so every iteration keeps the previous one's activations alive.
"""
import torch
from torch import nn


def step(loss, optimizer, clip=1.0):
    optimizer.zero_grad()
    loss.backward(retain_graph=True)  # expect: TL302
    nn.utils.clip_grad_norm_(
        [p for group in optimizer.param_groups for p in group["params"]], clip)
    optimizer.step()
    return loss.item()


def train(model, loader, epochs, lr=1e-3):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        total = 0.0
        for images, labels in loader:
            loss = criterion(model(images), labels)
            total += step(loss, optimizer)
        print(f"epoch {epoch}: {total / len(loader):.4f}")
