# guards: TL101 TL301
"""Correct code next to the new evaluation and container patterns.

``score`` is called both from evaluation (after ``eval()``) and from training, where its
output is backpropagated: not evaluation-only. ``run_epoch`` is guarded by a flag but every
caller passes True, and ``step`` uses ``set_grad_enabled(train)``. Accumulating a loss into a
dict entry that is backpropagated is gradient accumulation, not a leak. A criterion stored
in a dict of floats via ``.item()`` is fine."""
import torch
import torch.nn as nn


def score(net, x):
    return net(x).sum()


def main(model, loader, opt):
    for x, y in loader:
        model.train()
        loss = score(model, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.eval()
        print(score(model, x).item())
        model.train()


def run_epoch(model, data, opt, criterion, train=True):
    for x, y in data:
        loss = criterion(model(x), y)
        if train:
            opt.zero_grad()
            loss.backward()
            opt.step()


def fit(model, data, opt, criterion):
    for epoch in range(3):
        run_epoch(model, data, opt, criterion, train=True)


def step(model, data, opt, criterion, train):
    for x, y in data:
        with torch.set_grad_enabled(train):
            loss = criterion(model(x), y)
        if train:
            opt.zero_grad()
            loss.backward()
            opt.step()


def loop(model, data, opt, criterion):
    step(model, data, opt, criterion, train=False)


def accumulate(model, data, opt):
    objective = nn.MSELoss()
    totals = {"loss": 0.0}
    logged = {"loss": []}
    opt.zero_grad()
    for x, y in data:
        totals["loss"] += objective(model(x), y)
        logged["loss"].append(objective(model(x), y).item())
    totals["loss"].backward()
    opt.step()
