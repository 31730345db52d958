# guards: TL104
"""Evaluation between epochs whose eval() is undone, or a frozen part kept in eval.

- ``fit`` calls ``start_epoch(model)`` at the top of every epoch, and that
  helper calls ``model.train()``: the inline validation's ``eval()`` lasts
  until the next epoch.
- ``fit_probe`` freezes the backbone (``requires_grad_(False)``) and keeps it
  in eval mode on purpose while the head trains.
- ``fit_until`` switches to eval only in the last epoch, under an ``if``.
"""
import torch
import torch.nn.functional as F


def start_epoch(model, epoch):
    model.train()
    print("epoch", epoch)


def fit(model, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        start_epoch(model, epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            print(sum(F.cross_entropy(model(x), y).item() for x, y in val_loader))


def fit_probe(backbone, head, loader, optimizer, epochs):
    backbone.requires_grad_(False)
    head.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(head(backbone(x)), y).backward()
            optimizer.step()
        backbone.eval()


def fit_until(model, loader, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        if epoch == epochs - 1:
            model.eval()
