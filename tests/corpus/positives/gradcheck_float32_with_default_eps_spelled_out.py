"""gradcheck on float32 inputs with ``eps`` written out at (or near) its default.

``eps=1e-6`` is gradcheck's default spelled out, and ``eps=1e-5`` barely
larger: in float32 each finite difference at such a step is mostly rounding
error, so the check fails on a correct backward or, with loosened
tolerances, passes a wrong one.
"""
import torch
from torch.autograd import gradcheck


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * grad


def check_cube():
    x = torch.randn(5, requires_grad=True)
    assert gradcheck(Cube.apply, (x,), eps=1e-6, atol=1e-4)  # expect: TL502
    y = torch.rand(3, 2, dtype=torch.float32, requires_grad=True)
    assert torch.autograd.gradgradcheck(Cube.apply, (y,), eps=1e-5, atol=1e-3)  # expect: TL502


if __name__ == "__main__":
    check_cube()
