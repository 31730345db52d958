# guards: TL401
"""Fixed tables and constants written in place in __init__, forward and helpers.

Correct: every in-place write targets something autograd allows: a layer
weight filled under ``no_grad`` around the helper's call, a weight frozen
before it is written, a ``from_pretrained`` table (frozen by default), a
buffer, an ``nn.Parameter(..., requires_grad=False)``, ``.data``, and
``nn.init`` (which runs under ``no_grad``). The helper is also called with a
plain tensor, so its parameter is not always a leaf.
"""
import math

import torch
from torch import nn


def sinusoidal_(table):
    n, dim = table.shape
    position = torch.arange(n).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)


class Embeddings(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        with torch.no_grad():
            sinusoidal_(self.positions.weight)
        self.fixed = nn.Embedding(max_len, dim)
        self.fixed.weight.requires_grad = False
        sinusoidal_(self.fixed.weight)
        self.pretrained = nn.Embedding.from_pretrained(torch.randn(vocab, dim))
        self.pretrained.weight[0] = 0
        self.register_buffer("table", torch.zeros(max_len, dim))
        sinusoidal_(self.table)
        self.constant = nn.Parameter(torch.zeros(max_len, dim), requires_grad=False)
        sinusoidal_(self.constant)
        self.head = nn.Linear(dim, vocab)
        nn.init.zeros_(self.head.bias)
        self.head.weight.data.normal_(0, 0.02)
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)
        self.count = torch.zeros(1)
        self.count += 1

    def forward(self, ids):
        self.table.mul_(0.99)
        self.constant.add_(1)
        pos = torch.arange(ids.size(1))
        return self.head(self.norm(self.tokens(ids) + self.positions(pos) + self.fixed(pos)))


def ema_update(ema, model, decay=0.999):
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(decay).add_(p, alpha=1 - decay)


def train(model, ema, loader, lr=0.1):
    for ids, target in loader:
        loss = nn.functional.cross_entropy(model(ids).flatten(0, 1), target.flatten())
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= lr * p.grad
                    p.grad = None
        ema_update(ema, model)
        scratch = torch.zeros(4)
        sinusoidal_(scratch.view(2, 2))


model = Embeddings(100, 16, 32)
