# guards: TL304
"""A meter whose update converts tensors to numbers before summing, and a
meter that only keeps the latest value: passing the raw loss is fine."""
import torch


class RunningMean:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        if isinstance(value, torch.Tensor):
            value = value.detach().item()
        self.total += value * n
        self.count += n

    @property
    def mean(self):
        return self.total / max(self.count, 1)


class LastValue:
    def __init__(self):
        self.value = None

    def update(self, value):
        self.value = value


def train(model, loader, optimizer, criterion):
    running, last = RunningMean(), LastValue()
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running.update(loss, x.size(0))
        last.update(loss)
    return running.mean
