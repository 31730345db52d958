"""A GRU cell unrolled over the time steps of each batch, with the state
initialised once before the epoch: the last state of one batch starts the
next with its graph, so the second backward() fails."""
import torch
import torch.nn.functional as F
from torch import nn


class Tagger(nn.Module):
    def __init__(self, n_in, n_hidden, n_tags):
        super().__init__()
        self.gru_cell = nn.GRUCell(n_in, n_hidden)
        self.out = nn.Linear(n_hidden, n_tags)
        self.n_hidden = n_hidden

    def fit(self, loader, optimizer, epochs, batch_size):
        for epoch in range(epochs):
            h = torch.zeros(batch_size, self.n_hidden)
            for x, y in loader:
                loss = 0.0
                for t in range(x.size(1)):
                    h = self.gru_cell(x[:, t], h)  # expect: TL303
                    loss = loss + F.cross_entropy(self.out(h), y[:, t])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()


def train_step(model, x, y, hidden, criterion, optimizer):
    optimizer.zero_grad()
    output, hidden = model(x, hidden)
    loss = criterion(output, y)
    loss.backward()
    optimizer.step()
    return loss.item(), hidden


def train(model, loader, criterion, optimizer, batch_size):
    hidden = model.init_hidden(batch_size)
    for x, y in loader:
        loss, hidden = train_step(model, x, y, hidden, criterion, optimizer)  # expect: TL303
