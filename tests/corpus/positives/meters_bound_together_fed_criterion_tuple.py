"""SSD-style training: two meters made in one tuple assignment, fed the two losses
a custom criterion returns as a tuple.

``loss_l, loss_c = criterion(...)`` carry the graph (``loss_l + loss_c`` is
backpropagated), and each goes raw into an ``AverageMeter`` whose
``update`` sums it into ``self.sum``: every iteration's graph is kept.
"""
import torch
from torch import nn


class MultiBoxLoss(nn.Module):
    def forward(self, pred, target):
        loc = (pred[:, :2] - target[:, :2]).abs().mean()
        conf = nn.functional.cross_entropy(pred[:, 2:], target[:, 2].long())
        return loc, conf


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n


def train(model, loader, optimizer, criterion):
    loc_meter, conf_meter = AverageMeter(), AverageMeter()
    for images, targets in loader:
        loss_l, loss_c = criterion(model(images), targets)
        loss = loss_l + loss_c
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loc_meter.update(loss_l, images.size(0))  # expect: TL304
        conf_meter.update(loss_c, images.size(0))  # expect: TL304
    return loc_meter.sum / loc_meter.count, conf_meter.sum / conf_meter.count


if __name__ == "__main__":
    net = nn.Linear(4, 4)
    data = [(torch.randn(8, 4), torch.randn(8, 4).abs()) for _ in range(10)]
    train(net, data, torch.optim.SGD(net.parameters(), lr=0.1), MultiBoxLoss())
