"""Gradient penalty with ``create_graph=True``: the gradient is itself part of a
graph (double backward), and keeping it in a list every step keeps that graph."""
import torch


def train(model, loader, optimizer, criterion):
    penalties = []
    for x, y in loader:
        optimizer.zero_grad()
        x.requires_grad_(True)
        loss = criterion(model(x), y)
        (g,) = torch.autograd.grad(loss, x, create_graph=True)
        penalties.append(g)  # expect: TL301
        (loss + g.pow(2).sum()).backward()
        optimizer.step()
    return penalties
