# guards: TL801 TL802 TL803 TL804
"""Losses fed what they expect, next to activations a naive pairing check would blame.

A model that returns logits and probabilities (the loss takes the logits), a
``forward`` that applies softmax only in evaluation, ``log_softmax`` into
CrossEntropyLoss (it changes nothing), soft targets from a softmax (the target,
not the input), ``log`` of a softmax into NLLLoss, a sigmoid decoder into
BCELoss, a clamped output, a criterion rebound from BCELoss to
BCEWithLogitsLoss before the call, a model chosen at run time between a
softmax head and a logits head, and layers the file cannot read.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from models import ImportedNet  # the file cannot see what it returns


class TwoOutputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        logits = self.fc(x)
        return logits, F.softmax(logits, dim=1)


class EvalProbabilities(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.fc(x)
        if not self.training:
            x = F.softmax(x, dim=1)
        return x


class SoftmaxHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)


class LogitsHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(x)


decoder = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 32), nn.Sigmoid())
scorer = nn.Linear(32, 1)
layers = [nn.Linear(32, 10), nn.Softmax(dim=1)]
stacked = nn.Sequential(*layers)


def train(loader, teacher, args):
    two, evaluated = TwoOutputs(), EvalProbabilities()
    if args.softmax_head:
        chosen = SoftmaxHead()
    else:
        chosen = LogitsHead()
    criterion = nn.CrossEntropyLoss()
    bce = nn.BCELoss()
    for x, y, z, target in loader:
        logits, probs = two(x)
        loss = criterion(logits, y)
        loss = loss + criterion(evaluated(x), y)
        loss = loss + F.cross_entropy(F.log_softmax(logits, dim=1), y)
        loss = loss + F.cross_entropy(logits, F.softmax(teacher(x) / 4.0, dim=1))
        loss = loss + F.kl_div(F.log_softmax(logits, dim=1), probs.detach(), reduction="batchmean")
        loss = loss + F.nll_loss(torch.log(probs + 1e-8), y)
        loss = loss + bce(decoder(z), target)
        loss = loss + bce(scorer(x).clamp(0, 1).squeeze(1), y.float())
        loss = loss + criterion(chosen(x), y)
        loss = loss + criterion(ImportedNet()(x), y)
        loss = loss + criterion(stacked(x), y)
        bce = nn.BCEWithLogitsLoss()
        loss = loss + bce(scorer(x).squeeze(1), y.float())
        loss.backward()


if __name__ == "__main__":
    train([], None, argparse.Namespace(softmax_head=True))
