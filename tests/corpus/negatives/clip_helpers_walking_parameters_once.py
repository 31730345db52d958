# guards: TL205
"""Hand-written clipping helpers that are right about what they are given.

``clip_gradients`` makes a list of its argument before its two walks (the way
torch's own ``clip_grad_norm_`` does); ``scale_gradients`` walks once;
``report_norms`` walks twice but only reads the gradients; ``clip_twice`` is
handed a list; ``clip_if`` walks a second time only where the first walk did
not run.
"""
import torch
import torch.nn.functional as F


def clip_gradients(parameters, max_norm):
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = [p for p in parameters if p.grad is not None]
    total = torch.norm(torch.stack([p.grad.norm(2) for p in parameters]), 2)
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for p in parameters:
            p.grad.mul_(coef)
    return total


def scale_gradients(parameters, factor):
    for p in parameters:
        if p.grad is not None:
            p.grad.mul_(factor)


def report_norms(parameters):
    largest = max(p.grad.norm() for p in parameters)
    for p in parameters:
        print(p.grad.norm() / largest)


def clip_twice(parameters, max_norm):
    total = sum(p.grad.norm() ** 2 for p in parameters) ** 0.5
    for p in parameters:
        p.grad.mul_(min(1.0, max_norm / (total + 1e-6)))


def clip_if(parameters, max_norm, measure):
    if measure:
        print(sum(p.grad.norm() ** 2 for p in parameters))
    for p in parameters:
        p.grad.clamp_(-max_norm, max_norm)


def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        clip_gradients(model.parameters(), 1.0)
        scale_gradients(model.parameters(), 0.5)
        report_norms(list(model.parameters()))
        clip_twice(list(model.parameters()), 1.0)
        clip_if(model.parameters(), 1.0, measure=False)
        optimizer.step()
