# guards: TL401
"""A script edits the parameters of models it builds at module level, each time safely.

Correct: ``rescale`` is decorated with ``torch.no_grad()``; ``clip_head`` is only ever
called inside ``with torch.no_grad():``; ``legacy_nudge`` writes through ``.data``, which
autograd does not see (legacy, but no error); ``nn.init.*_`` run under ``no_grad``
themselves; ``frozen`` had every parameter frozen by a loop before any write, and the
``stats`` writes touch batch norm buffers (``running_mean``, ``running_var``,
``num_batches_tracked``), which never require grad.
"""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.bn(self.body(x)))


model = Net()
frozen = Net()
for p in frozen.parameters():
    p.requires_grad = False
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


@torch.no_grad()
def rescale(factor):
    model.body.weight.mul_(factor)


def clip_head(bound):
    model.head.weight.clamp_(-bound, bound)
    model.head.bias.clamp_(-bound, bound)


def legacy_nudge():
    model.head.bias.data.add_(0.01)
    nn.init.zeros_(model.body.bias)
    nn.init.kaiming_uniform_(model.head.weight)


def reset_frozen_and_stats():
    frozen.head.weight.zero_()
    model.bn.running_mean.zero_()
    model.bn.running_var.fill_(1)
    model.bn.num_batches_tracked.zero_()


for step in range(10):
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))
    loss = nn.functional.cross_entropy(model(x), y) + frozen(x).sum() * 0
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    rescale(0.999)
    with torch.no_grad():
        clip_head(1.0)
    legacy_nudge()
    reset_frozen_and_stats()
