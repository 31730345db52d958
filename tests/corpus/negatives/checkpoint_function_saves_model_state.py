# guards: TL501
"""A training script whose own ``checkpoint`` function saves the model to disk.

The name is the project's, not ``torch.utils.checkpoint.checkpoint``; the
method ``self.checkpoint`` of the trainer is the project's too.
"""
import os

import torch
from torch import nn


def checkpoint(model, optimizer, epoch, folder="checkpoints"):
    os.makedirs(folder, exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
               os.path.join(folder, f"epoch_{epoch}.pt"))


class Trainer:
    def __init__(self, model: nn.Module, optimizer, loader):
        self.model, self.optimizer, self.loader = model, optimizer, loader

    def checkpoint(self, epoch):
        checkpoint(self.model, self.optimizer, epoch)

    def fit(self, epochs):
        loss_fn = nn.CrossEntropyLoss()
        for epoch in range(epochs):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = loss_fn(self.model(x), y)
                loss.backward()
                self.optimizer.step()
            self.checkpoint(epoch)
