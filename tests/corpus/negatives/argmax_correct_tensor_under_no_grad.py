# guards: TL101 TL301
"""Accuracy accumulated as a tensor, ``correct += (out.argmax(1) == y).sum()``.

Correct: the whole loop is under ``torch.no_grad()``, and in any case a
comparison produces a bool tensor with no autograd history, so the running
tensor ``correct`` holds no graph.  Converting to a Python number happens
once, after the loop.
"""
import torch


def accuracy(model, val_loader, device):
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=device)
    total = 0
    with torch.no_grad():
        for x, y in val_loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            correct += (out.argmax(1) == y).sum()
            total += y.size(0)
    return correct.item() / total
