# guards: TL301
"""History dict filled with ``loss.detach().cpu()`` and detached predictions.

Correct: ``detach()`` returns a tensor with no autograd history, so the
entries appended to ``history["loss"]`` and ``history["pred"]`` across
iterations hold no graph.
"""
from collections import defaultdict

import torch
import torch.nn.functional as F


def fit(model, loader, optimizer, epochs, device):
    history = defaultdict(list)
    for epoch in range(epochs):
        model.train()
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = F.smooth_l1_loss(outputs, targets)
            loss.backward()
            optimizer.step()
            history["loss"].append(loss.detach().cpu())
            history["pred"].append(outputs.detach())
    history["loss"] = torch.stack(history["loss"])
    return history
