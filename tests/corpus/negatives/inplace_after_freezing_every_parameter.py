# guards: TL401
"""In-place edits of parameters after every one of them was frozen.

Correct: ``requires_grad = False`` on every parameter (a loop over
``parameters()``) makes them tensors that autograd ignores, so in-place
writes to them (pruning masks, weight clamping, copying in averaged weights)
cannot corrupt a graph or raise "a leaf Variable that requires grad is being
used in an in-place operation".
"""
import torch
import torch.nn as nn


def prune(model, threshold=1e-3):
    for p in model.parameters():
        p.requires_grad = False
    for p in model.parameters():
        p.mul_((p.abs() > threshold).float())
        p.clamp_(-1.0, 1.0)


def freeze_and_average(model, averaged):
    for param in model.parameters():
        param.requires_grad = False
    for param, avg in zip(model.parameters(), averaged):
        param.copy_(avg)
        param += 0.0


if __name__ == "__main__":
    net = nn.Linear(4, 2)
    prune(net)
    freeze_and_average(nn.Linear(4, 2), [torch.zeros(2, 4), torch.zeros(2)])
