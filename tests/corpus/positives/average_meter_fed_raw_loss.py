"""The ImageNet-example AverageMeter copied into a training script, fed the
loss tensor itself: ``self.sum += val * n`` chains every batch's graph."""
from torch import nn


class AverageMeter(object):
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train(model, loader, optimizer, device, epochs):
    criterion = nn.CrossEntropyLoss()
    loss_meter = AverageMeter()
    for epoch in range(epochs):
        loss_meter.reset()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            outputs = model(images)
            loss = criterion(outputs, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_meter.update(loss, images.size(0))  # expect: TL304
        print(f"epoch {epoch}: {loss_meter.avg:.4f}")
