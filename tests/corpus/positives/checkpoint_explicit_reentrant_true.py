"""TL501: ``use_reentrant=True`` spelled out, through the full ``torch.utils.checkpoint`` path."""
import torch
from torch import nn


class TextEncoder(nn.Module):
    def __init__(self, embed, layers):
        super().__init__()
        self.embed = embed
        self.layers = nn.ModuleList(layers)
        self.gradient_checkpointing = True

    def forward(self, input_ids):
        hidden = self.embed(input_ids)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                hidden = torch.utils.checkpoint.checkpoint(  # expect: TL501
                    layer, hidden, use_reentrant=True
                )
            else:
                hidden = layer(hidden)
        return hidden
