# guards: TL101 TL103
"""A trainer subclass implements the epoch hooks; the base class switches modes around them.

Correct: ``BaseTrainer`` (pytorch-template style) calls ``self.model.eval()``
before ``_valid_epoch`` and ``self.model.train()`` before ``_train_epoch``;
that code lives in another module, so the subclass's no_grad validation
loop is not reported.
"""
import torch

from base import BaseTrainer


class Trainer(BaseTrainer):
    def _train_epoch(self, epoch):
        self.model.train()
        for data, target in self.data_loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(data), target)
            loss.backward()
            self.optimizer.step()
        return self._valid_epoch(epoch)

    def _valid_epoch(self, epoch):
        total = 0.0
        with torch.no_grad():
            for data, target in self.valid_data_loader:
                output = self.model(data)
                total += self.criterion(output, target).item()
        return total / len(self.valid_data_loader)
