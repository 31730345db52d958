# guards: TL101 TL104
"""Validation switches to eval mode and restores the previous mode itself.

Correct for TL104: ``validate`` records ``model.training``, calls
``model.eval()`` and ends with ``model.train(was_training)``, so the
epoch loop keeps training in training mode. ``train_step`` never calls
``model.train()`` and does not need to.
"""
import torch


def train_step(model, batch, criterion, optimizer):
    x, y = batch
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def validate(model, val_loader, criterion):
    was_training = model.training
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in val_loader:
            total += criterion(model(x), y).item()
    model.train(was_training)
    return total / len(val_loader)


def fit(model, train_loader, val_loader, criterion, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for batch in train_loader:
            train_step(model, batch, criterion, optimizer)
        print(epoch, validate(model, val_loader, criterion))
