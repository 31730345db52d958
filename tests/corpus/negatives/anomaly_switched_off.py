# guards: TL503
"""Training scripts that make sure anomaly detection is off."""
import torch
from torch import nn

torch.autograd.set_detect_anomaly(False)


def train(model, loader, optimizer):
    loss_fn = nn.MSELoss()
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
