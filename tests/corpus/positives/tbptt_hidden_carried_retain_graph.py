"""Truncated BPTT done wrong: the hidden state is carried into the next batch
without detach, and retain_graph=True papers over the resulting error. Every
batch's graph stays linked to the previous one, so memory grows."""
import torch


def train(model, batches, criterion, optimizer):
    hidden = model.init_hidden(32)
    for x, y in batches:
        optimizer.zero_grad()
        output, hidden = model(x, hidden)  # expect: TL303
        loss = criterion(output, y)
        loss.backward(retain_graph=True)  # expect: TL302
        optimizer.step()
