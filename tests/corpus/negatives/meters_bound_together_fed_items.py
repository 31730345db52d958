# guards: TL304
"""The same SSD-style loop, correct: meters made in one tuple assignment get
``.item()`` values, a tuple that binds a meter and a plain counter keeps
only the meter, and meters rebuilt in each epoch's tuple assignment are
fed floats.
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


def train(model, loader, optimizer, criterion, epochs=2):
    for epoch in range(epochs):
        loc_meter, conf_meter, seen = AverageMeter(), AverageMeter(), 0
        for images, targets in loader:
            loss_l, loss_c = criterion(model(images), targets)
            loss = loss_l + loss_c
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loc_meter.update(loss_l.item(), images.size(0))
            conf_meter.update(loss_c.detach(), images.size(0))
            seen += images.size(0)
        print(epoch, loc_meter.sum / seen, conf_meter.sum / seen)


if __name__ == "__main__":
    net = nn.Linear(4, 4)
    data = [(torch.randn(8, 4), torch.randn(8, 4).abs()) for _ in range(10)]
    train(net, data, torch.optim.SGD(net.parameters(), lr=0.1), MultiBoxLoss())
