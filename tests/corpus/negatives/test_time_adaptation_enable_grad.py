# guards: TL101 TL102
"""Test-time adaptation (TENT-style): evaluation under no_grad re-enables grad to adapt.

Correct: the adaptation forward pass, its entropy loss and ``backward()`` run
under ``torch.enable_grad()`` inside the no-grad evaluation; only the final
predictions are computed without a graph.
"""
import torch
import torch.nn.functional as F


def entropy(logits):
    return -(logits.softmax(1) * logits.log_softmax(1)).sum(1).mean()


@torch.no_grad()
def evaluate_with_adaptation(model, test_loader, optimizer, steps=1):
    model.eval()
    correct = total = 0
    for x, y in test_loader:
        with torch.enable_grad():
            for _ in range(steps):
                loss = entropy(model(x))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        preds = model(x).argmax(1)
        correct += (preds == y).sum().item()
        total += y.numel()
    return correct / total


def input_saliency(model, images, labels):
    """Gradients with respect to the input, for a saliency map: grad re-enabled on purpose."""
    model.eval()
    with torch.no_grad():
        baseline = model(images).softmax(1)
    with torch.enable_grad():
        images = images.clone().requires_grad_(True)
        score = F.cross_entropy(model(images), labels)
        (grad,) = torch.autograd.grad(score, images)
    return baseline, grad.abs().amax(1)
