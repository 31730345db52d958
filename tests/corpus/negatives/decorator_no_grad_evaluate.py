# guards: TL101 TL301
"""Evaluation function decorated with ``@torch.no_grad()``.

Correct: the decorator disables autograd for the whole body, so the model
calls after ``model.eval()`` in the loop over ``val_loader`` record no graph
and the per-batch outputs appended to ``all_logits`` carry no graph either.
"""
import torch
import torch.nn.functional as F


@torch.no_grad()
def evaluate(model, val_loader, device):
    model.eval()
    all_logits, all_targets = [], []
    for images, targets in val_loader:
        images = images.to(device, non_blocking=True)
        logits = model(images)
        all_logits.append(logits)
        all_targets.append(targets)
    logits = torch.cat(all_logits)
    targets = torch.cat(all_targets).to(device)
    loss = F.cross_entropy(logits, targets).item()
    acc = (logits.argmax(1) == targets).float().mean().item()
    return loss, acc
