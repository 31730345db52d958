"""Evaluation under ``no_grad`` without ``model.eval()``: models whose behaviour
does depend on the mode (dropout, a GRU with inter-layer dropout, functional
dropout tied to ``self.training``) or whose class is imported, hence unknown."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from zoo import ResNet


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class StackedGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 8, num_layers=2, dropout=0.3)

    def forward(self, x):
        return self.gru(x)[0]


class FunctionalDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(F.dropout(x, 0.2, training=self.training))


def fit(model, loader, val_loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in val_loader:
            print(criterion(model(x), y).item())  # expect: TL103


def fit_gru(encoder, loader, val_loader, optimizer, criterion):
    encoder.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(encoder(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in val_loader:
            print(criterion(encoder(x), y).item())  # expect: TL103


def fit_functional(net, loader, val_loader, optimizer, criterion):
    net.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(net(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in val_loader:
            print(criterion(net(x), y).item())  # expect: TL103


def fit_imported(backbone, loader, val_loader, optimizer, criterion):
    backbone.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(backbone(x), y).backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in val_loader:
            print(criterion(backbone(x), y).item())  # expect: TL103


model = MLP()
encoder = StackedGRU()
net = FunctionalDropout()
backbone = ResNet()
