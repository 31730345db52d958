# guards: TL105
"""Old-style training code: ``Variable(x)``, ``volatile=False`` and ``requires_grad=True``.

Correct for TL105: ``volatile=False`` was the default and changes nothing;
only ``volatile=True`` was meant to stop recording.
"""
import torch
from torch.autograd import Variable


def train(model, loader, criterion, optimizer, epochs):
    model.train()
    for epoch in range(epochs):
        for images, labels in loader:
            images = Variable(images, volatile=False)
            labels = Variable(labels, requires_grad=False)
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()


def make_noise(batch, dim):
    return Variable(torch.randn(batch, dim), requires_grad=True)
