# guards: TL205
"""Clipping at the top of the iteration in gradient accumulation.

Correct enough to stay silent: gradients are cleared only every
``accum_steps`` iterations, so the clip at the top of an iteration acts on
the gradients accumulated so far, which the coming step still uses. Only a
loop that clears every iteration makes a clip before ``backward()`` a no-op.
"""
import torch


def train(model, loader, optimizer, criterion, accum_steps=4):
    for i, (x, y) in enumerate(loader):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
