"""TL502 with ``import torch as T``: inputs cast with ``.float()`` or made without a dtype."""
import torch as T
from torch.autograd import gradcheck


class Swish(T.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * T.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = T.sigmoid(x)
        return grad * (s + x * s * (1 - s))


def check_swish():
    x = T.linspace(-3, 3, 50).float().requires_grad_()
    assert gradcheck(Swish.apply, (x,))  # expect: TL502


def check_swish_batch():
    batch = T.rand(4, 5, requires_grad=True)
    return T.autograd.gradcheck(Swish.apply, batch, raise_exception=False)  # expect: TL502
