# guards: TL401
"""In-place operations on tensors that are not leaves requiring grad.

Correct: the training loop modifies in place only tensors autograd does not
track: input batches (``x.clamp_``), integer targets (``y[y == -1] = 0``), a
mask built with ``torch.ones`` (default ``requires_grad=False``), a running
statistic buffer, and an intermediate activation (``h.relu_()`` on a
non-leaf, allowed because linear's backward does not need its output).
"""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 3)
        self.register_buffer("running_norm", torch.zeros(()))

    def forward(self, x):
        h = self.fc1(x)
        h.relu_()
        if self.training:
            with torch.no_grad():
                self.running_norm.mul_(0.9).add_(0.1 * h.norm())
        return self.fc2(h)


def train(model, loader, optimizer, epochs, drop_prob=0.1):
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for x, y in loader:
            x.clamp_(-3.0, 3.0)
            y[y == -1] = 0
            mask = torch.ones(x.size(0), 1)
            mask[torch.rand(x.size(0)) < drop_prob] = 0
            x = x * mask
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    return model
