# guards: TL101
"""Evaluation helpers with no no_grad of their own, whose every call runs without grad.

Correct: ``evaluate`` is called under ``torch.set_grad_enabled(False)`` and from
``test``, a function decorated ``@torch.no_grad()``; ``score`` is only ever
called wrapped at the call, ``torch.no_grad()(score)(model, loader)``. No
forward pass of either helper records a graph.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    for x, y in loader:
        pred = model(x).argmax(dim=1)
        correct += (pred == y).sum().item()
        total += y.numel()
    return correct / total


def score(model, loader):
    model.eval()
    losses = []
    for x, y in loader:
        losses.append(F.cross_entropy(model(x), y).item())
    return sum(losses) / len(losses)


@torch.no_grad()
def test(model, test_loader):
    return evaluate(model, test_loader)


def train(model, train_loader, val_loader, test_loader, epochs=5):
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        with torch.set_grad_enabled(False):
            acc = evaluate(model, val_loader)
        val_loss = torch.no_grad()(score)(model, val_loader)
        print(epoch, acc, val_loss)
    return test(model, test_loader)


if __name__ == "__main__":
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    train(net, [], [], [])
