"""TL101 in a class method: ``validate(self)`` calls ``self.model(x)`` with grad on.

``self.model.eval()`` is called and the loop over ``self.val_loader`` runs
without ``torch.no_grad()``.
"""
import torch


class Trainer:
    def __init__(self, model, optimizer, criterion, train_loader, val_loader):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.train_loader = train_loader
        self.val_loader = val_loader

    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()

    def validate(self):
        self.model.eval()
        correct = 0
        for x, y in self.val_loader:
            out = self.model(x)  # expect: TL101
            correct += (out.argmax(1) == y).sum().item()
        return correct / len(self.val_loader.dataset)

    def save(self, path):
        torch.save(self.model.state_dict(), path)
