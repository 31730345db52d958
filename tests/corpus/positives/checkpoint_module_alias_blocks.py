"""TL501 through ``import torch.utils.checkpoint as cp`` and ``checkpoint_sequential``.

A vision backbone checkpoints each stage in training; neither call says
which variant to run, so both get the reentrant one.
"""
import torch.utils.checkpoint as cp
from torch import nn
from torch.utils.checkpoint import checkpoint_sequential


class Backbone(nn.Module):
    def __init__(self, stages, head, grad_checkpointing=True):
        super().__init__()
        self.stages = nn.ModuleList(stages)
        self.head = head
        self.grad_checkpointing = grad_checkpointing

    def forward_features(self, x):
        for stage in self.stages:
            if self.grad_checkpointing and self.training:
                x = cp.checkpoint(stage, x)  # expect: TL501
            else:
                x = stage(x)
        return x

    def forward(self, x):
        return self.head(self.forward_features(x))


def run_checkpointed(model: nn.Sequential, x, segments=4):
    return checkpoint_sequential(model, segments, x)  # expect: TL501
