# guards: TL301 TL304
"""Gradient accumulation through a small accumulator object: it sums the
losses of several micro-batches and the sum is backpropagated, so keeping
their graphs is the point."""


class LossAccumulator:
    def __init__(self):
        self.total = 0.0
        self.steps = 0

    def add(self, loss):
        self.total += loss
        self.steps += 1

    def mean(self):
        return self.total / max(self.steps, 1)


def train(model, loader, criterion, optimizer, accumulation=4):
    acc = LossAccumulator()
    for i, (x, y) in enumerate(loader):
        acc.add(criterion(model(x), y))
        if (i + 1) % accumulation == 0:
            loss = acc.mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            acc = LossAccumulator()
