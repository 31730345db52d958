"""TL504 through a project base class deriving from ``torch.autograd.Function``."""
import torch
import torch.nn.functional as F


class QuantFunction(torch.autograd.Function):
    @staticmethod
    def backward(ctx, grad):
        return grad, None, None


class LinearQuant(QuantFunction):
    @staticmethod
    def forward(ctx, x, weight, bits):
        ctx.weight, ctx.bits = weight, bits  # expect: TL504
        scale = weight.detach().abs().amax() / (2 ** (bits - 1) - 1)
        q = torch.round(weight / scale) * scale
        return F.linear(x, q)

    @staticmethod
    def backward(ctx, grad):
        return grad @ ctx.weight, None, None


class SymQuant(QuantFunction):
    @staticmethod
    def forward(ctx, x: torch.Tensor, bits: int):
        ctx.x = x  # expect: TL504
        ctx.bits = bits
        n = 2 ** (bits - 1) - 1
        return torch.round(x.clamp(-1, 1) * n) / n
