# guards: TL301
"""Loss history kept with ``losses.append(loss.item())``.

Correct: ``.item()`` converts the loss to a Python float, which carries no
graph, so the list can grow across iterations without keeping any
activations alive.
"""
import torch
from torch import nn


def train(model, train_loader, epochs, lr=1e-3, device="cpu"):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    losses = []
    for epoch in range(epochs):
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(xb).squeeze(-1), yb.float())
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses
