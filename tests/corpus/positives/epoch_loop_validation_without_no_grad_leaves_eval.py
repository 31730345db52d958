"""Validation between epochs puts the model in eval mode and nothing switches it back.

``model.train()`` runs once, before the epoch loop. The inline validation
(without ``no_grad``, which TL101 reports) calls ``model.eval()``; from the
second epoch on the model trains with dropout off and batch-norm frozen. The
other script ends every epoch with a bare ``eval()`` and nothing after it.
"""
import torch.nn.functional as F


def fit(model, loader, val_loader, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()  # expect: TL104
        total = 0.0
        for x, y in val_loader:
            total += F.cross_entropy(model(x), y).item()  # expect: TL101
        print(epoch, total / len(val_loader))


def fit_and_log(net, loader, optimizer, epochs, log):
    net.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
        log(epoch)
        net.eval()  # expect: TL104
