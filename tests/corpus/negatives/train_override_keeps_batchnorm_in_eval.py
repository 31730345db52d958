# guards: TL104
"""A module overrides ``train()`` to keep its backbone's batch-norm in eval mode
(fine-tuning with frozen statistics); its ``fit`` calls ``self.train()`` every
epoch and ``self.evaluate`` switches to eval mode.

Correct: ``self.train()`` runs the override, which switches the module back to
training mode (all but the backbone, on purpose) before each epoch.
"""
import torch
import torch.nn as nn


class Finetuner(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = backbone
        self.head = head

    def train(self, mode=True):
        super().train(mode)
        self.backbone.eval()
        return self

    def forward(self, x):
        return self.head(self.backbone(x))

    def evaluate(self, loader):
        self.eval()
        with torch.no_grad():
            return [self(x).argmax(1) for x, _ in loader]

    def fit(self, loader, val_loader, optimizer, criterion, epochs):
        for epoch in range(epochs):
            self.train()
            for x, y in loader:
                loss = criterion(self(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            self.evaluate(val_loader)
