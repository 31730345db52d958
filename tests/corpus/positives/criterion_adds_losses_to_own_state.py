"""TL301 inside a criterion: its forward runs once per training step and adds the loss
it computes to its own state (``self.losses[k] += l``, ``self.total = self.total + l``,
``self.history.append(l)``, a helper or a meter of its own that sums its argument: found at
the call that hands it the loss).
Every step's graph stays reachable through the module, as with ``total += loss``."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Meter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


class YoloLoss(nn.Module):
    def __init__(self, weights):
        super().__init__()
        self.weights = weights
        self.losses = {"cls": 0.0, "box": 0.0, "obj": 0.0}
        self.total = 0.0
        self.history = []
        self.meter = Meter()

    def forward(self, preds, targets):
        loss_cls = F.binary_cross_entropy_with_logits(preds[..., 5:], targets[..., 5:])
        loss_box = F.smooth_l1_loss(preds[..., :4], targets[..., :4])
        loss_obj = F.binary_cross_entropy_with_logits(preds[..., 4], targets[..., 4])
        self.losses["cls"] += loss_cls  # expect: TL301
        self.losses["box"] += loss_box  # expect: TL301
        self.losses["obj"] += loss_obj.detach()
        loss = self.weights[0] * loss_cls + self.weights[1] * loss_box + loss_obj
        self.total = self.total + loss  # expect: TL301
        self.meter.update(loss, preds.size(0))  # expect: TL301
        self._log(loss)  # expect: TL301
        return loss

    def _log(self, loss):
        self.history.append(loss)


class ContrastiveLoss(nn.modules.loss._Loss):
    def __init__(self, temperature=0.1):
        super().__init__()
        self.temperature = temperature
        self.seen = []

    def forward(self, z1, z2):
        logits = z1 @ z2.t() / self.temperature
        labels = torch.arange(z1.size(0), device=z1.device)
        loss = F.cross_entropy(logits, labels)
        self._remember(loss)  # expect: TL301
        return loss

    def _remember(self, loss):
        self.seen.append(loss)


def train(model, loader, optimizer):
    criterion = YoloLoss((1.0, 5.0))
    for images, targets in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), targets)
        loss.backward()
        optimizer.step()
