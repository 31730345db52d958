"""TL301: a tensor derived from the loss by arithmetic stored in a dict.

``per_step[i] = loss * x.size(0)`` stores a graph-carrying product for every
step of a loop that calls backward/step; ``per_step`` is created before the
loop.
"""
import torch.nn.functional as F


def train(model, batches, optimizer, num_steps):
    per_step = {}
    for i in range(num_steps):
        x, y = batches[i % len(batches)]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        per_step[i] = loss * x.size(0)  # expect: TL301
    return per_step
