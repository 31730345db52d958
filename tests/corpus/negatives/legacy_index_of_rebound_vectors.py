# guards: TL505
"""``.data[0]`` on names that hold a vector at the read, though some binding of them is 0-dim.

A loss reduced only in one branch, a reduced loss scaled by per-sample weights
afterwards, a reduced loss added to per-sample terms by ``+=``, a mean rebound
to the error it was taken from, a name the loop reduces after the read (the
read of the next iteration sees the new error first), and a tuple unpacking
that rebinds the name: each read is of a tensor with a dimension, where
``[0]`` is a correct index.
"""
import torch
import torch.nn.functional as F


def maybe_reduced(model, x, y, reduce):
    loss = (model(x) - y).pow(2)
    if reduce:
        loss = loss.mean()
    return loss


def reweighted(model, x, y, weights):
    loss = F.mse_loss(model(x), y)
    loss = loss * weights
    return loss


def with_per_sample_terms(model, x, y):
    loss = F.mse_loss(model(x), y)
    loss += (model(x) - y).pow(2).sum(1)
    return loss


def mean_then_error(model, x, y):
    err = (model(x) - y).abs()
    loss = err.mean()
    loss = err
    return loss


def outputs_and_loss(model, x, y):
    loss = F.mse_loss(model(x), y)
    loss, aux = model(x), None
    return loss


def track(model, loader):
    for x, y in loader:
        err = (model(x) - y).abs()
        print(err.data[0])
        err = err.mean()
        print(err.item())
    return (maybe_reduced(model, x, y, True).data[0], reweighted(model, x, y, 1).data[0],
            with_per_sample_terms(model, x, y).data[0], mean_then_error(model, x, y).data[0],
            outputs_and_loss(model, x, y).data[0])
