# guards: TL503
"""A debugging helper that replays one batch in anomaly mode to find the NaN's origin.

It is named for what it does and runs only when the loss turns NaN.
"""
import math

import torch
from torch import autograd, nn


def debug_nan_batch(model, x, y, loss_fn):
    with autograd.detect_anomaly():
        loss = loss_fn(model(x), y)
        loss.backward()


def train(model, loader, optimizer):
    loss_fn = nn.CrossEntropyLoss()
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        if math.isnan(loss.item()):
            debug_nan_batch(model, x, y, loss_fn)
            raise FloatingPointError("loss is NaN")
        loss.backward()
        optimizer.step()
