# guards: TL504
"""PyTorch 2 style Functions: forward has no ctx; setup_context stores what backward needs."""
import torch
from torch.autograd import Function


class Clamp(Function):
    @staticmethod
    def forward(x, low, high):
        return x.clamp(low, high)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, low, high = inputs
        ctx.low = low
        ctx.high = high
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inside = (x >= ctx.low) & (x <= ctx.high)
        return grad * inside, None, None

    @staticmethod
    def vmap(info, in_dims, x, low, high):
        return Clamp.apply(x, low, high), in_dims[0]


def clamp(x, low=-1.0, high=1.0):
    return Clamp.apply(x, low, high)


class Identity(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return grad
