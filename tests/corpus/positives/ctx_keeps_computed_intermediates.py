"""TL504 on tensors a custom Function computes in its forward and keeps on ctx.

None is an input or an output, so no in-place change or reference cycle is at
stake; each is still invisible to saved-tensor hooks (save_on_cpu, non-reentrant
checkpointing), which is what ctx.save_for_backward would give them.
"""
import torch
import torch.nn.functional as F
from torch.autograd import Function


class HardTanhSTE(Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, lo: float, hi: float):
        ctx.inside = (x >= lo) & (x <= hi)  # expect: TL504
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.inside, None, None


class SoftmaxCE(Function):
    @staticmethod
    def forward(ctx, logits, target):
        probs = F.softmax(logits, dim=-1)
        ctx.probs = probs  # expect: TL504
        ctx.target = target
        ctx.n = logits.size(0)
        return -torch.log(probs.gather(1, target[:, None])).mean()

    @staticmethod
    def backward(ctx, grad):
        g = ctx.probs.clone()
        g[torch.arange(ctx.n), ctx.target] -= 1
        return grad * g / ctx.n, None


class Normalize(Function):
    @staticmethod
    def forward(ctx, x, eps=1e-6):
        norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(eps)
        y = x / norm
        ctx.norm, ctx.eps = norm, eps  # expect: TL504
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return (grad - y * (grad * y).sum(-1, keepdim=True)) / ctx.norm, None


class TopKMask(Function):
    @staticmethod
    def forward(ctx, scores, k):
        idx = torch.argsort(scores, dim=-1, descending=True)[..., :k]
        ctx.idx = idx  # expect: TL504
        ctx.shape = scores.shape
        return torch.zeros_like(scores).scatter(-1, idx, 1.0) * scores

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros(ctx.shape, dtype=grad.dtype).scatter(-1, ctx.idx, grad.gather(-1, ctx.idx)), None


class ScaledExp(Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, scale):
        ctx.scaled = x * scale  # expect: TL504
        ctx.scale = scale
        return torch.exp(ctx.scaled)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale * torch.exp(ctx.scaled), None
