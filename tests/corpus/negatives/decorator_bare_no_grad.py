# guards: TL101 TL301
"""Evaluation decorated with a bare ``@torch.no_grad`` (no parentheses).

Correct: since PyTorch 2.0 ``torch.no_grad`` can be used as a decorator
without being called; the body runs with autograd disabled, so
``test_epoch``'s model calls after ``model.eval()`` are fine and the running
loss is a plain float.
"""
import torch
from torch import nn


@torch.no_grad
def test_epoch(model, test_loader, device):
    model.eval()
    criterion = nn.CrossEntropyLoss(reduction="sum")
    test_loss = 0.0
    correct = 0
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)
        output = model(data)
        test_loss += criterion(output, target).item()
        pred = output.argmax(dim=1, keepdim=True)
        correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct / len(test_loader.dataset)
