# guards: TL501
"""A checkpoint wrapper that forwards its caller's options, use_reentrant among them.

timm and mmengine style: ``checkpoint_seq(..., **kwargs)``. Whether the
reentrant variant runs is the caller's decision, made where torchlint cannot see.
"""
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


def checkpoint_blocks(blocks, x, **checkpoint_kwargs):
    for block in blocks:
        x = checkpoint(block, x, **checkpoint_kwargs)
    return x


def checkpoint_stages(stages: nn.Sequential, x, segments=2, **kwargs):
    return checkpoint_sequential(stages, segments, x, **kwargs)


class Stack(nn.Module):
    def __init__(self, blocks, ckpt_kwargs):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.ckpt_kwargs = ckpt_kwargs

    def forward(self, x):
        return checkpoint_blocks(self.blocks, x, **self.ckpt_kwargs)
