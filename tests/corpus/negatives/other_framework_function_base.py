# guards: TL504
"""A project-local ``Function`` base that is not torch.autograd.Function.

Operator graphs in compilers and probabilistic programming libraries often
define their own ``Function`` class with a static ``forward(ctx, ...)``.
"""
import torch


class Function:
    """A node of the project's symbolic graph."""

    @classmethod
    def apply(cls, *args):
        ctx = type("Ctx", (), {})()
        return cls.forward(ctx, *args)


class Affine(Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.x = x.contiguous()
        ctx.weight = weight
        return torch.matmul(x, weight.t())
