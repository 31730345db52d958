# guards: TL301
"""``train_one_epoch`` returns ``loss.item()``; the caller's history holds
Python floats, and an epoch-level helper returning a detached tensor is fine."""
import torch.nn as nn


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def finetune_epoch(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    return loss.detach()


def fit(model, loader, optimizer, epochs):
    criterion = nn.MSELoss()
    history, finetune = [], []
    for epoch in range(epochs):
        history.append(train_one_epoch(model, loader, optimizer, criterion))
        finetune.append(finetune_epoch(model, loader, optimizer, criterion))
    return history, finetune
