# guards: TL501
"""DeepSpeed's and FairScale's activation checkpointing: not torch.utils.checkpoint.

Their ``checkpoint`` functions have no ``use_reentrant`` argument at all.
"""
import torch
from torch import nn

from deepspeed.runtime.activation_checkpointing import checkpointing
from fairscale.nn.checkpoint import checkpoint_wrapper


class GPTStack(nn.Module):
    def __init__(self, blocks, use_deepspeed=True):
        super().__init__()
        self.blocks = nn.ModuleList(blocks if use_deepspeed else [checkpoint_wrapper(b) for b in blocks])
        self.use_deepspeed = use_deepspeed

    def forward(self, hidden):
        for block in self.blocks:
            if self.use_deepspeed:
                hidden = checkpointing.checkpoint(block, hidden)
            else:
                hidden = block(hidden)
        return torch.nn.functional.layer_norm(hidden, hidden.shape[-1:])
