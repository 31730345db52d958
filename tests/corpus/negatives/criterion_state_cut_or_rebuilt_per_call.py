# guards: TL301
"""Criteria and metric modules that keep state across calls without keeping graphs:
numbers and detached tensors (``.item()``, ``.detach()``, ``float()``, ``.data``), a dict
rebuilt or an entry set back to zero at the top of every call (it holds this step's graph
only, which the caller backpropagates anyway), the last loss kept by plain assignment, a
buffer updated under ``no_grad``, a running mean of detached values, and a torchmetrics-like
metric whose ``update`` runs under ``no_grad``."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MeanMetric(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(()))
        self.register_buffer("count", torch.zeros(()))

    @torch.no_grad()
    def update(self, value):
        self.total += value
        self.count += 1

    def compute(self):
        return self.total / self.count.clamp(min=1)


class DetectionLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("ema", torch.zeros(()))
        self.history = []
        self.sums = {"cls": 0.0, "box": 0.0}
        self.running_mean = 0.0
        self.steps = 0
        self.metric = MeanMetric()

    def forward(self, pred, target):
        self.parts = {}
        self.step_losses = {"cls": 0.0, "box": 0.0}
        loss_cls = F.cross_entropy(pred[0], target[0])
        loss_box = F.smooth_l1_loss(pred[1], target[1])
        self.step_losses["cls"] += loss_cls
        self.step_losses["box"] += loss_box
        self.parts["cls"] = loss_cls
        loss = loss_cls + loss_box
        self.sums["cls"] += loss_cls.item()
        self.sums["box"] += float(loss_box)
        self.history.append(loss.detach())
        self.history.append(loss.cpu().item())
        self.running_mean = 0.99 * self.running_mean + 0.01 * loss.detach()
        self.running_mean += loss.data
        self.last_loss = loss
        self.steps += 1
        with torch.no_grad():
            self.ema.mul_(0.9).add_(0.1 * loss)
            self.ema += 0.0 * loss
        self.metric.update(loss)
        return loss


class CollectingLoss(nn.Module):
    """Keeps this call's terms for the caller, and empties them at every call."""

    def __init__(self):
        super().__init__()
        self.terms = []

    def forward(self, pred, target):
        self.terms.clear()
        loss = F.mse_loss(pred, target)
        self.terms.append(loss)
        return sum(self.terms)


def train(model, loader, optimizer):
    criterion = DetectionLoss()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
