"""TL401 on the parameters of models a script builds at module level and edits from
functions that run while autograd records.

``model`` is a class of this file, ``backbone`` a torchvision classifier. ``shrink_head``
and ``reset_scale`` run after each backward, outside ``torch.no_grad()``: every write
raises "a leaf Variable that requires grad is being used in an in-place operation",
through an attribute of the model (``model.head.weight``), one of a model inside it
(``model.encoder.proj.bias``) and an ``nn.Parameter`` its ``__init__`` binds
(``model.scale``). The batch norm's running mean is a buffer: writing it is fine.
"""
import torch
import torchvision
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 8)
        self.norm = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.norm(self.proj(x))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(8, 2)
        self.scale = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return self.head(self.encoder(x)) * self.scale


model = Classifier().to("cpu")
backbone = torchvision.models.resnet18(num_classes=2)
optimizer = torch.optim.SGD(list(model.parameters()) + list(backbone.parameters()), lr=0.1)


def shrink_head(factor):
    model.head.weight.mul_(factor)  # expect: TL401
    model.encoder.proj.bias.zero_()  # expect: TL401
    model.encoder.norm.running_mean.zero_()
    backbone.fc.weight[0] = 0  # expect: TL401


def reset_scale():
    model.scale.fill_(1.0)  # expect: TL401


for step in range(10):
    x, y = torch.randn(4, 16), torch.randint(0, 2, (4,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss = loss + backbone(torch.randn(4, 3, 32, 32)).sum() * 0
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    shrink_head(0.99)
    reset_scale()
