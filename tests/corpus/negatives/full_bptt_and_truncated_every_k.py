# guards: TL301 TL303
"""Backpropagation through time done on purpose: a loop over time steps that
keeps the state's graph and calls backward once after it, and truncated BPTT
that backpropagates and detaches every k steps."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def train_sequence(cell, head, xs, ys, optimizer):
    for x_seq, y_seq in zip(xs, ys):
        h = torch.zeros(x_seq.size(1), cell.hidden_size)
        loss = 0.0
        for t in range(x_seq.size(0)):
            h = cell(x_seq[t], h)
            loss = loss + F.mse_loss(head(h), y_seq[t])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def train_tbptt(rnn, head, stream, optimizer, k=35):
    hidden = None
    loss = 0.0
    for step, (x, y) in enumerate(stream):
        out, hidden = rnn(x, hidden)
        loss = loss + F.cross_entropy(head(out[-1]), y)
        if (step + 1) % k == 0:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            hidden = hidden.detach()
            loss = 0.0


def unroll(model: nn.Module, x, steps):
    state = model.initial_state(x.size(0))
    outputs = []
    for _ in range(steps):
        out, state = model(x, state)
        outputs.append(out)
    return torch.stack(outputs)
