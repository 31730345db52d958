"""TL401 at module level: in-place scaling of leaves that require grad.

A script creates its parameters with ``requires_grad=True`` and then
rescales them in place at module level, outside ``torch.no_grad()``.  The
training loop afterwards is correct (its updates are under no_grad).
"""
import torch

weights = torch.randn(4, 3, requires_grad=True)
bias = torch.zeros(3, requires_grad=True)
weights.mul_(0.01)  # expect: TL401
bias.fill_(0.1)  # expect: TL401

x = torch.randn(32, 4)
target = torch.randn(32, 3)
for step in range(100):
    loss = (x @ weights + bias - target).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        weights -= 0.1 * weights.grad
        bias -= 0.1 * bias.grad
        weights.grad.zero_()
        bias.grad.zero_()
print(loss.item())
