"""Findings in live code next to branches that never run: the dead branches hold
neither findings nor facts (the ``model.eval()`` under ``if False:`` never runs, so
``evaluate`` still evaluates in training mode)."""
import torch
from torch import nn

decoder = nn.Sequential(nn.Linear(256, 1000), nn.Dropout(0.2))
criterion = nn.NLLLoss()


def step(hidden, target, use_teacher_forcing):
    if True:
        loss = criterion(decoder(hidden), target)  # expect: TL803
    elif use_teacher_forcing:
        loss = criterion(decoder(hidden), target)
    else:
        loss = criterion(decoder(hidden), target)
    if False:
        loss = criterion(decoder(hidden), target)
    while 0:
        loss = criterion(decoder(hidden), target)
    if not True:
        loss = criterion(decoder(hidden), target)
    else:
        loss = loss + criterion(decoder(hidden), target)  # expect: TL803
    return loss


def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def evaluate(model, val_loader):
    if False:
        model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            acc = (model(x).argmax(1) == y).float().mean()  # expect: TL103
