# guards: TL303
"""Recurrent training loops that cut the state at every batch boundary in the
usual ways: detach at the bottom of the iteration, re-initialise per batch,
detach the (h, c) tuple with a comprehension, ``.data``, and an in-place
``detach_()``."""
import torch
from torch import nn


def train_detach_at_end(model, loader, optimizer, criterion):
    h = None
    for x, y in loader:
        optimizer.zero_grad()
        out, h = model(x, h)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        h = h.detach()


def train_reinit_per_batch(model, loader, optimizer, criterion, device):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        hidden = model.init_hidden(x.size(0))
        optimizer.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output.view(-1, output.size(-1)), y.view(-1))
        loss.backward()
        optimizer.step()


class SeqTrainer:
    def __init__(self, hidden_size=64, layers=2):
        self.lstm = nn.LSTM(32, hidden_size, layers, batch_first=True)
        self.head = nn.Linear(hidden_size, 10)
        self.optimizer = torch.optim.Adam([*self.lstm.parameters(), *self.head.parameters()])

    def fit(self, loader, batch_size):
        state = (torch.zeros(2, batch_size, 64), torch.zeros(2, batch_size, 64))
        for x, y in loader:
            state = tuple(s.detach() for s in state)
            out, state = self.lstm(x, state)
            loss = nn.functional.cross_entropy(self.head(out[:, -1]), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def fit_data(self, loader, h0, c0):
        hx = (h0, c0)
        for x, y in loader:
            out, hx = self.lstm(x, hx)
            loss = nn.functional.cross_entropy(self.head(out[:, -1]), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            hx = (hx[0].data, hx[1].data)

    def fit_inplace(self, loader, hidden):
        for x, y in loader:
            out, hidden = self.lstm(x, hidden)
            for h in hidden:
                h.detach_()
            loss = nn.functional.cross_entropy(self.head(out[:, -1]), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
