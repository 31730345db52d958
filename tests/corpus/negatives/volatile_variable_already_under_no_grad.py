# guards: TL101 TL105
"""A half-migrated evaluation: ``volatile=True`` left inside ``torch.no_grad()``.

Correct for TL105: the flag is dead, but nothing is recorded; the no_grad
block already does what volatile used to.
"""
import torch
from torch.autograd import Variable


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for images, labels in val_loader:
            images = Variable(images, volatile=True)
            correct += (model(images).argmax(1) == labels).sum().item()
    return correct
