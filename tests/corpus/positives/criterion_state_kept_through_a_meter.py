"""A module's forward hands its output to a meter of its own that sums what it gets: every
training step's graph stays reachable from the meter. Kept where the meter is named for losses,
or in any meter of a criterion (a class named as a loss, here one with a projection head)."""
import torch.nn as nn


class Meter:
    def __init__(self):
        self.sum = 0

    def update(self, value):
        self.sum += value


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.loss_meter = Meter()

    def forward(self, x):
        out = self.fc(x).mean()
        self.loss_meter.update(out)  # expect: TL301
        return out


class ContrastiveLoss(nn.Module):
    def __init__(self, features=4):
        super().__init__()
        self.projection = nn.Linear(features, 2)
        self.meter = Meter()

    def forward(self, anchor, positive):
        distance = (self.projection(anchor) - self.projection(positive)).pow(2).sum(1).mean()
        self.meter.update(distance)  # expect: TL301
        return distance
