"""TL205 in the spellings clipping is written in.

The deprecated ``clip_grad_norm`` imported from ``torch.nn.utils``, the
module imported under another name, ``clip_grad_value_`` from the
``clip_grad`` submodule, and a clip inside ``if clip:`` after the step: each
runs where no step applies what it clipped.
"""
import torch.nn.utils as tnu
from torch.nn.utils import clip_grad_norm
from torch.nn.utils.clip_grad import clip_grad_value_


def train(model, loader, optimizer, criterion, clip=1.0):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        clip_grad_norm(model.parameters(), clip)  # expect: TL205
        tnu.clip_grad_norm_(model.parameters(), clip)  # expect: TL205
        if clip:
            clip_grad_value_(model.parameters(), clip)  # expect: TL205


def train_step(model, batch, optimizer, criterion):
    optimizer.zero_grad()
    loss = criterion(model(batch[0]), batch[1])
    tnu.clip_grad_value_(model.parameters(), 0.5)  # expect: TL205
    loss.backward()
    optimizer.step()
    return loss.item()
