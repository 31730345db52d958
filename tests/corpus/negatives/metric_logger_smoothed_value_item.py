# guards: TL304
"""torchvision's reference-scripts logger: SmoothedValue keeps a deque and a
running total, and MetricLogger.update turns tensors into numbers first; the
training loop also passes ``loss_value = loss.item()``."""
from collections import defaultdict, deque

import torch


class SmoothedValue:
    def __init__(self, window_size=20):
        self.deque = deque(maxlen=window_size)
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.deque.append(value)
        self.count += n
        self.total += value * n


class MetricLogger:
    def __init__(self, delimiter="\t"):
        self.meters = defaultdict(SmoothedValue)
        self.delimiter = delimiter

    def update(self, **kwargs):
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                v = v.item()
            self.meters[k].update(v)


def train_one_epoch(model, criterion, optimizer, data_loader, device):
    model.train()
    metric_logger = MetricLogger(delimiter="  ")
    lr_meter = SmoothedValue(window_size=1)
    for image, target in data_loader:
        image, target = image.to(device), target.to(device)
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        metric_logger.update(loss=loss, lr=optimizer.param_groups[0]["lr"])
        lr_meter.update(optimizer.param_groups[0]["lr"])
    return metric_logger
