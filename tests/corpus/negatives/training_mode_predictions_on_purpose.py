# guards: TL103
"""Predictions in training mode on purpose, or in eval mode set elsewhere.

- ``predict_mc`` calls ``model.train()`` right before sampling: Monte-Carlo
  dropout wants dropout on at prediction time.
- ``predict_with_dropout`` calls ``enable_dropout``, which switches the
  dropout layers to training mode (``m.train()`` over ``model.modules()``):
  Monte-Carlo dropout again.
- ``accuracy`` gets a model that its only caller put in eval mode under
  another name (``net.eval()``).
- ``shape_check`` runs once before training starts: the mode changes nothing.
"""
import torch
from torch import nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


def enable_dropout(model):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train()


def train_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


@torch.no_grad()
def predict_mc(model, x_test, samples=20):
    model.train()
    return torch.stack([model(x_test).softmax(-1) for _ in range(samples)]).mean(0)


@torch.no_grad()
def predict_with_dropout(model, test_loader):
    enable_dropout(model)
    return [model(x).softmax(-1) for x, _ in test_loader]


@torch.no_grad()
def accuracy(model, val_loader):
    hits = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)
    return hits / len(val_loader.dataset)


@torch.no_grad()
def shape_check(model, sample):
    print(model(sample).shape)


def main(train_loader, val_loader, test_loader, x_test, sample, epochs=3):
    net = Net()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    shape_check(net, sample)
    for epoch in range(epochs):
        train_epoch(net, train_loader, optimizer)
        net.eval()
        print(accuracy(net, val_loader))
    print(predict_mc(net, x_test))
    print(predict_with_dropout(net, test_loader))


if __name__ == "__main__":
    main(None, None, None, None, None)
