# guards: TL303
"""LightningModules that keep recurrent state on ``self`` correctly: one
detaches it in ``on_train_batch_start``, the other inside ``training_step``;
``self.log`` of the loss is fine (Lightning detaches)."""
import lightning.pytorch as pl
import torch
from torch import nn


class DetachInHook(pl.LightningModule):
    def __init__(self, dim=64):
        super().__init__()
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, 1)
        self.hidden = None

    def on_train_batch_start(self, batch, batch_idx):
        if self.hidden is not None:
            self.hidden = self.hidden.detach()

    def training_step(self, batch, batch_idx):
        x, y = batch
        out, self.hidden = self.gru(x, self.hidden)
        loss = nn.functional.mse_loss(self.head(out[:, -1]), y)
        self.log("loss", loss, prog_bar=True)
        return loss


class DetachInStep(pl.LightningModule):
    def __init__(self, dim=64):
        super().__init__()
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, 1)
        self.state = None

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.state is not None:
            self.state = tuple(s.detach() for s in self.state)
        out, self.state = self.lstm(x, self.state)
        loss = nn.functional.mse_loss(self.head(out[:, -1]), y)
        self.log("train/loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
