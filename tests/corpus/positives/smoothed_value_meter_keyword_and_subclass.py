"""A smoothing meter that appends to a window and sums a total, its subclass,
and a trainer that updates them with graph tensors (by keyword too)."""
from collections import deque

import torch.nn.functional as F


class SmoothedValue:
    def __init__(self, window=50):
        self.window = deque(maxlen=window)
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.window.append(value)
        self.total = self.total + value * n
        self.count += n


class LossMeter(SmoothedValue):
    pass


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.loss_meter = LossMeter()
        self.aux_meter = SmoothedValue()

    def train_epoch(self, loader):
        for x, y in loader:
            logits, aux = self.model(x)
            loss = F.cross_entropy(logits, y)
            aux_loss = 0.1 * aux.pow(2).mean()
            total = loss + aux_loss
            self.optimizer.zero_grad()
            total.backward()
            self.optimizer.step()
            self.loss_meter.update(loss)  # expect: TL304
            self.aux_meter.update(value=aux_loss, n=x.size(0))  # expect: TL304
