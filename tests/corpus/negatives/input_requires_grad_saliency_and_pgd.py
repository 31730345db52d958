# guards: TL101 TL403
"""Input-gradient methods: a saliency map, a PGD attack and an R1 penalty.

Correct: ``requires_grad`` is set on inputs (a loop variable, a clone of
the batch, a perturbation made with ``torch.zeros_like``), never on a loss;
the code then reads their ``.grad`` or passes them as ``inputs`` to
``torch.autograd.grad``.
"""
import torch
import torch.nn.functional as F
from torch import autograd


def saliency_maps(model, loader, device):
    model.eval()
    maps = []
    for images, labels in loader:
        images = images.to(device)
        images.requires_grad_()
        scores = model(images).gather(1, labels.to(device).unsqueeze(1)).sum()
        model.zero_grad()
        scores.backward()
        maps.append(images.grad.detach().abs().amax(dim=1).cpu())
    return maps


def pgd(model, x, y, eps=8 / 255, alpha=2 / 255, steps=10):
    delta = torch.zeros_like(x).uniform_(-eps, eps)
    delta.requires_grad = True
    for _ in range(steps):
        loss = F.cross_entropy(model(x + delta), y)
        grad, = autograd.grad(loss, delta)
        delta.data = (delta + alpha * grad.sign()).clamp(-eps, eps).data
    return (x + delta).detach()


def r1_penalty(discriminator, real):
    real = real.detach().requires_grad_(True)
    logits = discriminator(real)
    grad, = autograd.grad(outputs=logits.sum(), inputs=real, create_graph=True)
    return grad.pow(2).flatten(1).sum(1).mean()
