"""``train_one_epoch`` returns its last loss tensor, graph included, and the
caller keeps one per epoch in a history list."""
import torch.nn as nn


def train_one_epoch(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    return loss


def fit(model, loader, optimizer, epochs):
    criterion = nn.MSELoss()
    history = []
    for epoch in range(epochs):
        loss = train_one_epoch(model, loader, optimizer, criterion)
        history.append(loss)  # expect: TL301
    return history
