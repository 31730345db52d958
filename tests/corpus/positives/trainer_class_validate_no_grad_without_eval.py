"""A trainer puts its model in train mode for each epoch but validates without eval()."""
import torch
from torch import nn


class Trainer:
    def __init__(self, model, train_loader, val_loader, lr=0.01):
        self.model = model
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()

    def validate(self):
        total, correct = 0, 0
        with torch.no_grad():
            for x, y in self.val_loader:
                logits = self.model(x)  # expect: TL103
                correct += (logits.argmax(1) == y).sum().item()
                total += y.numel()
        return correct / total

    def fit(self, epochs):
        for epoch in range(epochs):
            self.train_epoch()
            print(epoch, self.validate())
