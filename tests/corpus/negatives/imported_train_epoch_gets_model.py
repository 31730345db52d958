# guards: TL104
"""The epoch loop calls a training helper from another module, then a local validation.

Correct as far as torchlint can tell: ``engine.train_one_epoch`` receives the
model and, as in torchvision's references, starts with ``model.train()``.
"""
import torch

from engine import train_one_epoch


def validate(model, val_loader, criterion):
    model.eval()
    with torch.no_grad():
        return sum(criterion(model(x), y).item() for x, y in val_loader)


def main(model, train_loader, val_loader, criterion, optimizer, epochs):
    for epoch in range(epochs):
        train_one_epoch(model, criterion, optimizer, train_loader, epoch)
        for x, y in train_loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            break
        validate(model, val_loader, criterion)
