"""TL201: ``zero_grad()`` called once before the loop, never inside it.

Gradients are cleared before training starts but then accumulate over every
iteration of the loop, which calls backward and ``opt.step()``.
"""
import torch
import torch.nn.functional as F


def finetune(net, x, y, steps=50):
    opt = torch.optim.SGD(net.parameters(), lr=1e-2)
    opt.zero_grad()
    for step in range(steps):
        out = net(x)
        loss = F.mse_loss(out, y)
        loss.backward()
        opt.step()  # expect: TL201
    return net
