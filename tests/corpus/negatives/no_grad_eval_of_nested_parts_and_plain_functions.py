# guards: TL103
"""Evaluation under ``no_grad`` without ``eval()``, where eval mode would change nothing.

Correct in effect: ``Regressor`` is built from a ``Block`` of its own (Linear and
ReLU) and a Linear head, so neither it nor any of its parts holds dropout or
batch-norm; ``linear_model`` is a plain function of two tensors, which has no
training mode at all. Calling ``eval()`` would change no number.
"""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Regressor(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.blocks = nn.Sequential(Block(dim), Block(dim))
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


def linear_model(x, w, b):
    return x @ w + b


def fit(train_loader, val_loader, epochs=10):
    model = Regressor(8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val_loss = sum(nn.functional.mse_loss(model(x).squeeze(-1), y).item() for x, y in val_loader)
        print(f"epoch {epoch}: val {val_loss:.4f}")


def fit_by_hand(X, Y, X_val, Y_val, steps=200, lr=0.05):
    w = torch.zeros(X.shape[1], requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for step in range(steps):
        loss = ((linear_model(X, w, b) - Y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
            w.grad.zero_()
            b.grad.zero_()
        if step % 20 == 0:
            with torch.no_grad():
                val_loss = ((linear_model(X_val, w, b) - Y_val) ** 2).mean()
            print(step, val_loss.item())
