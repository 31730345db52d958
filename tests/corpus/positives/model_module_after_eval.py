"""TL101 through a wrapper: ``model.module(x)`` after ``model.eval()``.

``model`` is a ``DistributedDataParallel`` wrapper; validation calls the
wrapped module directly, still without ``torch.no_grad()``.
"""
import torch.nn.functional as F


def evaluate_ddp(model, val_loader, device):
    model.eval()
    total = 0.0
    for x, y in val_loader:
        x, y = x.to(device), y.to(device)
        out = model.module(x)  # expect: TL101
        total += F.cross_entropy(out, y).item()
    return total / len(val_loader)
