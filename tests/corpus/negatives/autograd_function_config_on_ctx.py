# guards: TL504
"""Custom autograd Functions that keep only configuration on ctx and save tensors properly."""
import torch
import torch.nn.functional as F
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class FusedLayerNorm(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, normalized_shape, eps=1e-5):
        ctx.normalized_shape = normalized_shape
        ctx.eps = eps
        ctx.input_shape = x.shape
        ctx.n_rows = x.size(0)
        ctx.dtype = x.dtype
        ctx.device = x.device
        ctx.has_bias = bias is not None
        ctx.dims = [-(i + 1) for i in range(len(normalized_shape))]
        mean = x.mean(dim=ctx.dims, keepdim=True)
        rstd = torch.rsqrt(x.var(dim=ctx.dims, keepdim=True, unbiased=False) + eps)
        out = (x - mean) * rstd * weight + (bias if bias is not None else 0)
        ctx.save_for_backward(x, weight, mean, rstd)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, weight, mean, rstd = ctx.saved_tensors
        xhat = (x - mean) * rstd
        grad_w = (grad_out * xhat).sum(0)
        grad_b = grad_out.sum(0) if ctx.has_bias else None
        g = grad_out * weight
        grad_x = rstd * (g - g.mean(ctx.dims, keepdim=True) - xhat * (g * xhat).mean(ctx.dims, keepdim=True))
        return grad_x, grad_w, grad_b, None, None


class ArgmaxOneHot(Function):
    @staticmethod
    def forward(ctx, logits, dim: int):
        index = logits.argmax(dim, keepdim=True)
        one_hot = torch.zeros_like(logits).scatter_(dim, index, 1.0)
        ctx.mark_non_differentiable(index)
        ctx.dim = dim
        return one_hot, index

    @staticmethod
    def backward(ctx, grad_one_hot, grad_index):
        return grad_one_hot, None


class ScaleGrad(Function):
    @staticmethod
    def forward(ctx, x, scale: float):
        ctx.scale = scale
        ctx.needs_x = ctx.needs_input_grad[0]
        return F.relu(x.view_as(x))

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale if ctx.needs_x else None, None
