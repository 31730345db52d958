# guards: TL101
"""Training and evaluation helpers of a project whose imports never name torch.

Correct as far as this file can tell: it imports its numerical library and
its metrics, and torch is not among them, so nothing says ``model`` is a torch
module (chainer, mxnet and hand-written autodiff libraries share the
spelling), and a ``torch.no_grad()`` written into it would raise NameError
unless an import came with it. Whoever calls ``evaluate`` decides its mode.
"""
import numpy as np
from sklearn.metrics import accuracy_score


def evaluate(model, test_loader):
    model.eval()
    predictions, targets = [], []
    for images, labels in test_loader:
        outputs = model(images)
        predictions.append(np.asarray(outputs.argmax(1)))
        targets.append(np.asarray(labels))
    return accuracy_score(np.concatenate(targets), np.concatenate(predictions))


def train(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
