"""Evaluation that forgot both switches: no ``no_grad()`` and no ``eval()``.

The net (dropout and batch-norm) is trained by ``train_epoch``; the validation
loop between epochs and ``predict`` run it with autograd recording (TL101) and
in training mode (TL103): dropout drops, batch-norm normalises each batch by
itself and rewrites its running statistics with validation data.
"""
import torch
from torch import nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3))
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.body(x))


def train_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


def predict(model, features):
    return model(features).argmax(1).tolist()  # expect: TL103


def main(train_loader, val_loader, features, epochs=5):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(epochs):
        train_epoch(model, train_loader, optimizer)
        correct = 0
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()  # expect: TL101, TL103
        print(epoch, correct)
    print(predict(model, features))
