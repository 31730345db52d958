# guards: TL301
"""Gradients from ``torch.autograd.grad`` kept per step: per-batch gradient
snapshots (for gradient-similarity statistics) and input-gradient saliency maps.

Correct: without ``create_graph=True`` the returned gradients carry no graph.
"""
import torch
from torch.autograd import grad


def train_with_grad_snapshots(model, loader, optimizer, criterion):
    snapshots = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        g = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
        snapshots.append(g)
        loss.backward()
        optimizer.step()
    return snapshots


def train_with_saliency(model, loader, optimizer, criterion):
    maps, norms = [], 0
    for x, y in loader:
        optimizer.zero_grad()
        x.requires_grad_(True)
        loss = criterion(model(x), y)
        (x_grad,) = grad(loss, x, retain_graph=True)
        maps.append(x_grad.abs())
        norms += grad(loss, x, retain_graph=True, create_graph=False)[0].norm()
        loss.backward()
        optimizer.step()
    return maps, norms
