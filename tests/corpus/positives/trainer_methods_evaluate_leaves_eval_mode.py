"""A trainer's fit loop: train_epoch never calls train(), evaluate() calls self.model.eval()."""
import torch
from torch import nn


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.criterion = nn.CrossEntropyLoss()

    def train_epoch(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()

    def evaluate(self, loader):
        self.model.eval()
        with torch.no_grad():
            return sum(self.criterion(self.model(x), y).item() for x, y in loader)

    def fit(self, train_loader, val_loader, epochs):
        self.model.train()
        for epoch in range(epochs):
            self.train_epoch(train_loader)
            print(epoch, self.evaluate(val_loader))  # expect: TL104
