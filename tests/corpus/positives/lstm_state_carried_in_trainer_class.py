"""A trainer keeps the LSTM's (h, c) on self and feeds it back into the model
batch after batch without detaching it; the torch alias is ``T``."""
import torch as T
from torch import nn


class StatefulTrainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = T.optim.Adam(model.parameters(), lr=lr)
        self.hidden = None

    def train_epoch(self, loader):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            out, self.hidden = self.model(x, self.hidden)  # expect: TL303
            loss = self.criterion(out.flatten(0, 1), y.flatten())
            loss.backward()
            self.optimizer.step()
