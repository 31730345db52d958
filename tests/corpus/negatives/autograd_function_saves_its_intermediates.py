# guards: TL504
"""Custom Functions that compute tensors in forward and save them with save_for_backward.

What stays on ctx is what save_for_backward cannot take or need not: sizes, shapes,
dtypes, flags, Python numbers read from tensors (``.item()``, ``float(...)``,
``.tolist()``), a random state, and a NumPy array a SciPy backward reads.
"""
import numpy as np
import torch
import torch.nn.functional as F
from scipy import special
from torch.autograd import Function


class HardTanhSTE(Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, lo: float, hi: float):
        inside = (x >= lo) & (x <= hi)
        ctx.save_for_backward(inside)
        ctx.lo, ctx.hi = lo, hi
        ctx.fraction_inside = inside.float().mean().item()
        ctx.all_inside = bool(inside.all())
        ctx.input_dtype = x.dtype
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside, None, None


class SoftmaxCE(Function):
    @staticmethod
    def forward(ctx, logits, target):
        probs = F.softmax(logits, dim=-1)
        ctx.save_for_backward(probs, target)
        ctx.n = logits.size(0)
        ctx.classes = logits.shape[-1]
        ctx.ndim = logits.dim()
        ctx.peak = float(probs.max())
        ctx.labels = target.unique().tolist()
        ctx.contiguous = logits.is_contiguous()
        ctx.rng_state = torch.get_rng_state()
        return -torch.log(probs.gather(1, target[:, None])).mean()

    @staticmethod
    def backward(ctx, grad):
        probs, target = ctx.saved_tensors
        g = probs.clone()
        g[torch.arange(ctx.n), target] -= 1
        return grad * g / ctx.n, None


class Erfcx(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x_np = x.detach().cpu().numpy()
        ctx.device = x.device
        return torch.from_numpy(special.erfcx(ctx.x_np)).to(x.device)

    @staticmethod
    def backward(ctx, grad):
        x = ctx.x_np
        d = 2 * x * special.erfcx(x) - 2 / np.sqrt(np.pi)
        return grad * torch.from_numpy(d).to(ctx.device)
