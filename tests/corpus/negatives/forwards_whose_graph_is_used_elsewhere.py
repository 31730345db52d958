# guards: TL101
"""Forwards with no backward in sight whose graph still matters, or that run once.

A lazy-init forward runs once; a feature extractor whose hooks keep activations for a
backward the caller runs; a loop at module level whose outputs a later backward consumes;
a function that keeps its outputs on ``self`` for a later loss."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.LazyLinear(4)

    def forward(self, x):
        return self.body(x)

    def apply_init(self, inputs):
        self.forward(*inputs)


class Extractor:
    def __init__(self, model):
        self.model = model
        self.features = []
        model.register_forward_hook(lambda m, i, o: self.features.append(o))

    def run(self, x):
        self.model(x)
        return len(self.features)


class Recorder:
    def __init__(self, model):
        self.model = model
        self.outputs = []

    def record(self, x):
        self.outputs.append(self.model(x))


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
chunks = [torch.randn(2, 3) for _ in range(4)]
outs = []
for chunk in chunks:
    logits = net(chunk)
    outs.append(logits)
total = torch.cat(outs).sum()
total.backward()
opt.step()
