"""``torch.compile`` misread as in-place, and compiled again at every step.

The bare ``torch.compile(model)`` compiles nothing; the training step builds
a new compiled wrapper of the loss function every time it runs; the epoch
loop compiles the model again and keeps the result.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x)


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = torch.compile(F.cross_entropy)(model(x), y)  # expect: TL509
    loss.backward()
    optimizer.step()


model = Net()
torch.compile(model)  # expect: TL508
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    fast = torch.compile(model, mode="max-autotune")  # expect: TL509
    for x, y in zip(torch.randn(20, 8, 16), torch.randint(0, 4, (20, 8))):
        train_step(fast, optimizer, x, y)
