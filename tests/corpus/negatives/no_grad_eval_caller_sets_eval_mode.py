# guards: TL101 TL103
"""The evaluation helper relies on its caller to call ``model.eval()``.

Correct: ``main`` switches the model to eval mode before calling
``evaluate`` and back to train mode after; the helper itself only handles
grad mode.
"""
import torch
import torch.nn.functional as F


def evaluate(model, val_loader):
    correct = total = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    return correct / total


def main(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        print(epoch, evaluate(model, val_loader))
