# guards: TL301 TL304
"""torchvision-detection style step: several losses summed, then one backward.

Correct: the model returns a dict of losses; they are summed within the
iteration into ``losses`` and backpropagated once.  The reduced values used
for logging are converted with ``.item()``, and ``metric_logger`` receives
floats.  ``optimizer.zero_grad()`` runs before ``losses.backward()``.
"""
import math
import sys


def train_one_epoch(model, optimizer, data_loader, device, epoch, metric_logger, print_freq=10):
    model.train()
    for images, targets in metric_logger.log_every(data_loader, print_freq, f"Epoch: [{epoch}]"):
        images = list(image.to(device) for image in images)
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]

        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())

        loss_value = losses.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            print({k: v.item() for k, v in loss_dict.items()})
            sys.exit(1)

        optimizer.zero_grad()
        losses.backward()
        optimizer.step()

        metric_logger.update(loss=loss_value, **{k: v.item() for k, v in loss_dict.items()})
        metric_logger.update(lr=optimizer.param_groups[0]["lr"])
    return metric_logger
