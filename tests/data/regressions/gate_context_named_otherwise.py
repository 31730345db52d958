# TL504's text gate asked for `ctx.` stores: a forward that names its context otherwise
# (`context`, `c`) was never read, though the rule takes whatever the first argument is named.
import torch
from torch.autograd import Function


class Scale(Function):
    @staticmethod
    def forward(context, x, weight):
        out = x @ weight.t()
        context.x = x
        return out

    @staticmethod
    def backward(context, grad):
        return grad, grad.t() @ context.x
