# guards: TL101 TL303 TL401
"""Word-level language model training in the style of pytorch/examples: the
hidden state is carried across batches but repackaged (detached) at the top of
every iteration by a helper imported from another module; evaluation carries
it too, under no_grad."""
import math

import torch
import torch.nn as nn

from utils import batchify, get_batch, repackage_hidden


def evaluate(model, data_source, criterion, bptt, ntokens, eval_batch_size=10):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i, bptt)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(model, train_data, criterion, lr, bptt, ntokens, batch_size, clip=0.25):
    model.train()
    total_loss = 0.0
    hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i, bptt)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
    return math.exp(total_loss / (batch + 1))
