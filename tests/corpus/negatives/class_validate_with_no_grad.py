# guards: TL101 TL301
"""Trainer class whose ``validate`` method wraps its loop in ``torch.no_grad()``.

Correct: ``self.model.eval()`` is followed by a loop over ``self.val_loader``
inside ``with torch.no_grad():``; the per-batch losses stored in
``self.val_losses`` are ``.item()`` floats.
"""
import torch


class Trainer:
    def __init__(self, model, optimizer, criterion, train_loader, val_loader, device):
        self.model = model
        self.optimizer = optimizer
        self.criterion = criterion
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.device = device
        self.val_losses = []

    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            x, y = x.to(self.device), y.to(self.device)
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()

    def validate(self):
        self.model.eval()
        with torch.no_grad():
            for x, y in self.val_loader:
                x, y = x.to(self.device), y.to(self.device)
                out = self.model(x)
                self.val_losses.append(self.criterion(out, y).item())
        return sum(self.val_losses[-len(self.val_loader):]) / len(self.val_loader)

    def fit(self, epochs):
        for _ in range(epochs):
            self.train_epoch()
            print(self.validate())
