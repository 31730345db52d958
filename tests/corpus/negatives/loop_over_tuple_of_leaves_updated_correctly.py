# guards: TL401 TL506
"""The same hand-made regression, written correctly.

The flags are switched on in a loop over ``(w, b)``, the update runs under
``torch.no_grad()``, buffers in a tuple loop are plain tensors written in
place, and a loop over a tuple of config objects sets their own
``require_grad`` attribute (not tensors: not a typo). After the loop, ``p``
is only the last element, a tensor that never required grad.
"""
import argparse

import torch

w = torch.randn(3, 1)
b = torch.zeros(1)
for p in (w, b):
    p.requires_grad = True

running_mean = torch.zeros(1)
running_var = torch.ones(1)

encoder_cfg = argparse.Namespace(dim=3)
decoder_cfg = argparse.Namespace(dim=1)
for cfg in (encoder_cfg, decoder_cfg):
    cfg.require_grad = False

x = torch.randn(64, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
for epoch in range(100):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            p -= 0.1 * p.grad
            p.grad.zero_()
    for stat in (running_mean, running_var):
        stat.mul_(0.9)
    running_mean += 0.1 * y.mean()

for p in (w, running_var):
    pass
p.add_(1.0)
