# guards: TL301
"""Helpers whose return value is a Python number (``.item()``, ``float()``,
``.tolist()``), called in a training loop and kept: a nested helper named
like a loss, a later-defined one, and a method.

Correct: a float carries no graph, whatever the helper is called.
"""
import torch


def fit(model, loader, optimizer, criterion):
    def closure_loss(x, y):
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    total_loss = 0
    for x, y in loader:
        total_loss += closure_loss(x, y)
    return total_loss


def fit_later(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        losses.append(train_loss_step(model, x, y, optimizer, criterion))
    return losses


def train_loss_step(model, x, y, optimizer, criterion):
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    value = loss.item()
    return value


def batch_metrics(model, x, y, optimizer, criterion):
    optimizer.zero_grad()
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    return float(loss), out.argmax(1).tolist()


def fit_metrics(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        losses.append(batch_metrics(model, x, y, optimizer, criterion))
    return losses


class Trainer:
    def fit(self, loader):
        history = []
        for x, y in loader:
            history.append(self.compute_loss(x, y))
        return history

    def compute_loss(self, x, y):
        self.optimizer.zero_grad()
        loss = self.criterion(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.item(), "n": len(x)}
