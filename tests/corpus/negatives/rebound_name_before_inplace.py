# guards: TL401
"""Only the binding that reaches a write counts: this x does not require grad."""
import torch


def check(model, loss):
    x = torch.ones(2)
    x[1] = float("nan")
    x.add_(1)
    x = torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    return x.grad
