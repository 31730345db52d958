# guards: TL404
"""Adversarial examples: inputs rebound from their own gradient.

Correct: FGSM takes one step (there is no next step whose ``.grad`` could
be missing), the evaluation loop rebinds ``data`` from the loader every
iteration, and PGD makes the perturbed input a new leaf each iteration
(``.detach()`` after clamping) before reading its gradient again.
"""
import torch
import torch.nn.functional as F


def fgsm(model, image, label, epsilon):
    image.requires_grad = True
    loss = F.nll_loss(model(image), label)
    model.zero_grad()
    loss.backward()
    image = image + epsilon * image.grad.sign()
    return torch.clamp(image, 0, 1)


def robust_accuracy(model, test_loader, epsilon):
    correct = 0
    for data, target in test_loader:
        data.requires_grad = True
        loss = F.nll_loss(model(data), target)
        model.zero_grad()
        loss.backward()
        data = data + epsilon * data.grad.sign()
        with torch.no_grad():
            correct += (model(data).argmax(1) == target).sum().item()
    return correct / len(test_loader.dataset)


def pgd(model, images, labels, eps=0.03, alpha=0.007, steps=10):
    adv = images.clone().detach()
    for _ in range(steps):
        adv.requires_grad = True
        cost = F.cross_entropy(model(adv), labels)
        cost.backward()
        adv = adv + alpha * adv.grad.sign()
        delta = torch.clamp(adv - images, min=-eps, max=eps)
        adv = torch.clamp(images + delta, min=0, max=1).detach()
    return adv
