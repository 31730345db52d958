"""A LightningModule keeps its LSTM state on ``self`` between training steps
and feeds it back without detaching; Lightning's next step then backpropagates
into the previous step's freed graph."""
import lightning.pytorch as pl
import torch
from torch import nn


class StatefulLM(pl.LightningModule):
    def __init__(self, vocab, dim=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)
        self.hidden = None

    def forward(self, tokens, hidden):
        out, hidden = self.lstm(self.embed(tokens), hidden)
        return self.head(out), hidden

    def training_step(self, batch, batch_idx):
        tokens, targets = batch
        logits, self.hidden = self(tokens, self.hidden)  # expect: TL303
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
