# guards: TL101
"""Validation under ``with torch.no_grad(), torch.autocast(...):``.

Correct: a ``with`` statement with several context managers applies all of
them; ``torch.no_grad()`` is one of them, so the forward passes in the loop
over ``val_loader`` after ``model.eval()`` record no graph.
"""
import torch


def validate(model, val_loader, criterion, device="cuda"):
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad(), torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        for images, target in val_loader:
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            output = model(images)
            total += criterion(output, target).item() * images.size(0)
            n += images.size(0)
    return total / n
