# guards: TL502
"""gradcheck with ``eps`` on float64 inputs, and float32 inputs with a step
chosen for single precision.

A float64 input may take any ``eps``; a float32 input checked with
``eps=1e-3`` (or a step computed from the dtype) is a deliberate coarse
check, not the default carried over.
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
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    assert gradcheck(Cube.apply, (x,), eps=1e-6, atol=1e-4)
    y = torch.randn(5, requires_grad=True)
    assert gradcheck(Cube.apply, (y,), eps=1e-3, atol=1e-2, rtol=1e-2)
    step = torch.finfo(y.dtype).eps ** (1 / 3)
    assert gradcheck(Cube.apply, (y,), eps=step, atol=1e-2, rtol=1e-2)


if __name__ == "__main__":
    check_cube()
