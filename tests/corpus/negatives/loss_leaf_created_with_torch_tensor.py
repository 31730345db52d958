# guards: TL403
"""Loss accumulators created as leaves with ``torch.tensor``/``torch.zeros``.

Correct for this rule: a tensor made by a factory is a leaf, and setting
``requires_grad`` on it is allowed (whether such a loss is what the author
wanted is not something a reader of one file can tell).
"""
import torch


def regularisation(params, device, weight=1e-4):
    reg_loss = torch.zeros(1, device=device)
    reg_loss.requires_grad = True
    for p in params:
        reg_loss = reg_loss + p.pow(2).sum()
    return weight * reg_loss


def init_loss(device):
    total_loss = torch.tensor(0.0, device=device)
    total_loss.requires_grad_()
    return total_loss
