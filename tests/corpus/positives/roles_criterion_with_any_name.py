"""TL301 where nothing is named like a loss: the criterion is ``objective``, built from
``nn.CrossEntropyLoss``, and the network ``learner`` is an ``nn.Module`` subclass of the file.
Roles come from construction, so ``err`` carries a graph and ``history`` keeps every one."""
import torch
import torch.nn as nn


class Learner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


learner = Learner()
objective = nn.CrossEntropyLoss()
opt = torch.optim.SGD(learner.parameters(), lr=0.1)


def fit(data):
    history = []
    for x, y in data:
        err = objective(learner(x), y)
        opt.zero_grad()
        err.backward()
        opt.step()
        history.append(err)  # expect: TL301
    return history
