# guards: TL103
"""Evaluation under ``no_grad`` without ``model.eval()``, of models whose classes
are in the file and hold no dropout or batch-norm: an embedding + GRU + linear
classifier and an ``nn.Sequential`` of linear layers and ReLUs.

Correct in effect: train and eval mode compute the same thing for these
layers, so the missing ``eval()`` changes no number.
"""
import torch
import torch.nn as nn


class GRUClassifier(nn.Module):
    def __init__(self, vocab_size, dim, classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.fc = nn.Linear(dim, classes)
        self.dim = dim

    def forward(self, tokens):
        out, _ = self.gru(self.embedding(tokens))
        return self.fc(torch.relu(out[:, -1]))


def train(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def evaluate(model, val_loader):
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct


def main(loader, val_loader, criterion):
    model = GRUClassifier(1000, 64, 2).to("cpu")
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(5):
        train(model, loader, optimizer, criterion)
        print(evaluate(model, val_loader))


def test(net, test_loader, criterion):
    with torch.no_grad():
        for x, y in test_loader:
            print(criterion(net(x), y).item())


def mlp_main(loader, test_loader, criterion):
    net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(5):
        net.train()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(net(x), y).backward()
            optimizer.step()
        test(net, test_loader, criterion)


def train_ensemble(x, y, criterion, members=4):
    models = list()
    for k in range(members):
        model = nn.Sequential(nn.Linear(1, 20), nn.ReLU() if k % 2 else nn.Tanh(), nn.Linear(20, 1))
        models.append(model)
        optimizer = torch.optim.Adam(model.parameters())
        for step in range(1000):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
    return models


def predict_ensemble(models, test_loader):
    for model in models:
        with torch.no_grad():
            for x in test_loader:
                print(model(x).mean().item())
