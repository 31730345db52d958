"""A LightningModule that forces requires_grad on its outputs and its loss."""
import pytorch_lightning as pl
import torch
from torch import nn


class Regressor(pl.LightningModule):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.loss_fn = nn.SmoothL1Loss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        with torch.no_grad():
            features = self.backbone(x)
        out = self.head(features).squeeze(1)
        out.requires_grad = True  # expect: TL403
        loss = self.loss_fn(out, y)
        loss.requires_grad_(True)  # expect: TL403
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
