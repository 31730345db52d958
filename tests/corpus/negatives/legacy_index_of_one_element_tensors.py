# guards: TL505
"""``.data[0]`` on tensors that still have a dimension: every index here is correct.

A running loss started as ``torch.zeros(1)`` keeps shape ``(1,)`` however many
0-dim losses are added to it; a policy-gradient loss built from a ``(1,)``
log-probability backpropagates (one element) and has an index 0 too; a loss
function of this file that returns per-sample values, a criterion built with
the 0.3-era ``reduce=False``, and a per-sample criterion kept on ``self`` all
give one loss per sample, of which ``[0]`` is the first. A comprehension's
``loss`` is its own variable (one-element tensors kept in a list), not the
function's 0-dim loss of the same name.
"""
import torch
from torch import nn


def squared_error(prediction, target):
    return (prediction - target) ** 2


class Trainer:
    def __init__(self, model):
        self.model = model
        self.criterion = nn.CrossEntropyLoss(reduction="none")
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(self, x, y):
        self.optimizer.zero_grad()
        per_sample = self.criterion(self.model(x), y)
        per_sample.mean().backward()
        self.optimizer.step()
        return self.criterion(self.model(x), y).data[0], per_sample.data[0]


def running_loss(model, loader, optimizer):
    criterion = nn.MSELoss()
    total = torch.zeros(1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total.data[0]


def reinforce(policy, state, optimizer, reward):
    probs = policy(state)  # shape (1, n_actions)
    action = torch.multinomial(probs, 1)[0]
    loss = -torch.log(probs[0, action]) * reward  # shape (1,)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.data[0]


def first_sample_errors(model, x, y):
    legacy = nn.MSELoss(reduce=False)
    with torch.no_grad():
        out = model(x)
        return squared_error(out, y).data[0], legacy(out, y).data[0]


def first_of_each(model, x, y, kept):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return [loss.data[0] for loss in kept], sorted(kept, key=lambda loss: loss.data[0])
