# guards: TL104
"""Validation switches to eval mode; a helper of the file switches back to training.

Correct: ``validate`` calls ``model.eval()``, and ``set_train_mode`` (which calls
``model.train()``) runs before the next epoch's training steps, so dropout and
batch-norm are back in training mode whenever the model is trained.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def set_train_mode(model):
    model.train()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d) and getattr(m, "frozen", False):
            m.eval()


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(F.cross_entropy(model(x), y).item() for x, y in loader)


def fit(model, train_loader, val_loader, epochs=10):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        set_train_mode(model)
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        print(epoch, validate(model, val_loader))


if __name__ == "__main__":
    net = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.Dropout(0.2), nn.LazyLinear(10))
    fit(net, [], [])
