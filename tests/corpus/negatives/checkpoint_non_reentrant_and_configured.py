# guards: TL501
"""Activation checkpointing written the recommended way, or decided by configuration.

Hugging Face style: the checkpoint function is built with ``partial`` from
user kwargs, a config flag picks the variant, and the stem call passes
``use_reentrant=False``. Nothing here leaves the choice to the deprecated default.
"""
from functools import partial

import torch
import torch.utils.checkpoint
from torch import nn


class Encoder(nn.Module):
    def __init__(self, layers, use_reentrant=False):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.use_reentrant = use_reentrant
        self.gradient_checkpointing = False
        self._gradient_checkpointing_func = None

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None):
        kwargs = gradient_checkpointing_kwargs or {"use_reentrant": False}
        self._gradient_checkpointing_func = partial(torch.utils.checkpoint.checkpoint, **kwargs)
        self.gradient_checkpointing = True

    def forward(self, hidden):
        for i, layer in enumerate(self.layers):
            if self.gradient_checkpointing and self.training:
                if i == 0:
                    hidden = torch.utils.checkpoint.checkpoint(layer, hidden, use_reentrant=False)
                else:
                    hidden = torch.utils.checkpoint.checkpoint(layer, hidden, use_reentrant=self.use_reentrant)
            else:
                hidden = layer(hidden)
        return hidden
