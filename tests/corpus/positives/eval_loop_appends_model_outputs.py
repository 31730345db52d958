"""TL101 and TL301 on one line: eval loop appends raw model outputs.

``validate`` calls ``model(x)`` after ``model.eval()`` without no_grad
(TL101) and appends the graph-carrying output to a list created before the
loop over ``val_loader`` (TL301).
"""
import torch


def validate(model, val_loader):
    model.eval()
    outputs = []
    for x, _ in val_loader:
        outputs.append(model(x))  # expect: TL101, TL301
    return torch.cat(outputs)
