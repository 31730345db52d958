# guards: TL603
"""A training step that must read its loss on the host: it stops before a NaN spreads.

DINO and MAE read ``loss.item()`` on every step to test it with
``math.isfinite`` and exit: the step waits for the device there anyway, so
the meter that also gets ``loss.item()`` costs no further wait. Logging
inside ``if step % print_freq == 0`` and the epoch's average read after the
loop are deliberate reads too.
"""
import math
import sys

import torch

device = torch.device("cuda")


def train_one_epoch(model, loader, optimizer, criterion, meter, print_freq=50):
    total = torch.zeros((), device=device)
    for step, (images, targets) in enumerate(loader):
        images, targets = images.to(device, non_blocking=True), targets.to(device, non_blocking=True)
        loss = criterion(model(images), targets)
        if not math.isfinite(loss.item()):
            print("Loss is {}, stopping training".format(loss.item()))
            sys.exit(1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss=loss.item())
        total += loss.detach()
        if step % print_freq == 0:
            print(step, meter)
    return total.item() / max(1, len(loader))
