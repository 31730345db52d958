# guards: TL104
"""Linear probing: the training function puts the frozen backbone in eval mode
on purpose (its batch-norm statistics must not move) and trains a head on its
features; evaluation puts both in eval mode.

Correct: the backbone is meant to be in eval mode while the head trains, so
the evaluation's ``backbone.eval()`` changes nothing the next epoch relies on;
the head is switched back with ``head.train()``.
"""
import torch


def evaluate(backbone, head, val_loader):
    backbone.eval()
    head.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (head(backbone(x)).argmax(1) == y).sum().item()
    return correct


def train_probe(backbone, head, loader, optimizer, criterion):
    backbone.eval()  # frozen: keep its batch-norm statistics
    head.train()
    for x, y in loader:
        loss = criterion(head(backbone(x)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(backbone, head, loader, val_loader, criterion, epochs):
    backbone.requires_grad_(False)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    for epoch in range(epochs):
        train_probe(backbone, head, loader, optimizer, criterion)
        evaluate(backbone, head, val_loader)
