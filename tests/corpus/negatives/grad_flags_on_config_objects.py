# guards: TL506
"""Names like ``require_grad`` that are flags of one's own objects, not of tensors.

An options object and a module each keep their own ``require_grad`` and
``retain_grad`` flags and act on them with the real API
(``requires_grad_``, ``retain_grad()``); a tensor subclass keeps a private
``_requires_grad`` copy. Nothing here assigns a misspelled attribute to a
tensor.
"""
from types import SimpleNamespace

import torch
from torch import nn

opts = SimpleNamespace(require_grad=True)
opts.retain_grad = True
opts.requires_grads = False


class Adapter(nn.Module):
    def __init__(self, dim, frozen=False):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.require_grad = not frozen
        self.proj.requires_grad_(self.require_grad)

    def forward(self, x):
        hidden = self.proj(x)
        if opts.retain_grad and hidden.requires_grad:
            hidden.retain_grad()
        return hidden


class TaggedTensor(torch.Tensor):
    def tag(self):
        self._requires_grad = self.requires_grad
        return self
