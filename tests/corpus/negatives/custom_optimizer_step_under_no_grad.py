# guards: TL102
"""Custom optimizers: ``step`` runs under ``@torch.no_grad()`` and re-enables grad for the closure.

Correct: the closure's forward pass and ``backward()`` run under
``torch.enable_grad()``; the Lookahead wrapper steps its inner optimizer under
no_grad, which is what every optimizer does internally.
"""
import torch
from torch.optim import Optimizer


class SignSGD(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-group["lr"])
        return loss


class Lookahead:
    def __init__(self, base_optimizer, k=5, alpha=0.5):
        self.base_optimizer = base_optimizer
        self.k, self.alpha, self.steps = k, alpha, 0
        self.slow = [[p.detach().clone() for p in g["params"]] for g in base_optimizer.param_groups]

    @torch.no_grad()
    def step(self, closure=None):
        loss = self.base_optimizer.step(closure)
        self.steps += 1
        if self.steps % self.k == 0:
            for group, slow in zip(self.base_optimizer.param_groups, self.slow):
                for p, q in zip(group["params"], slow):
                    q.add_(p - q, alpha=self.alpha)
                    p.copy_(q)
        return loss


def fit(model, loader, criterion, epochs):
    optimizer = Lookahead(SignSGD(model.parameters(), lr=1e-3))
    for epoch in range(epochs):
        for x, y in loader:
            def closure():
                optimizer.base_optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                return loss
            optimizer.step(closure)
    return model
