# guards: TL504
"""A hand-written checkpoint Function and a straight-through estimator.

The checkpoint keeps the function and its ``*args`` on ctx, as
``torch.utils.checkpoint`` once did: what ``*args`` holds is not visible.
The estimator keeps only scalars and a mask built inside the forward.
"""
import torch
from torch.autograd import Function


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.input_tensors = list(args[:length])
        ctx.input_params = list(args[length:])
        ctx.fwd_cpu_state = torch.get_rng_state()
        with torch.no_grad():
            output_tensors = ctx.run_function(*ctx.input_tensors)
        return output_tensors

    @staticmethod
    def backward(ctx, *output_grads):
        ctx.input_tensors = [x.detach().requires_grad_(True) for x in ctx.input_tensors]
        with torch.enable_grad():
            outputs = ctx.run_function(*ctx.input_tensors)
        grads = torch.autograd.grad(outputs, ctx.input_tensors + ctx.input_params, output_grads,
                                    allow_unused=True)
        del ctx.input_tensors, ctx.input_params, outputs
        return (None, None) + grads


class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x, bits=8, clip=1.0):
        levels = 2 ** bits - 1
        ctx.clip = clip
        ctx.inside = x.abs() <= clip
        return torch.round(x.clamp(-clip, clip) * levels) / levels

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.inside, None, None
