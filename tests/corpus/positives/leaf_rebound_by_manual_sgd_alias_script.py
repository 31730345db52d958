"""A linear-regression script (``import torch as T``) that rebinds its weights."""
import torch as T

X = T.randn(100, 3)
Y = X @ T.tensor([[2.0], [-1.0], [0.5]]) + 0.3
W = T.randn(3, 1, requires_grad=True)
b = T.zeros(1, requires_grad=True)
lr = 0.1

for epoch in range(100):
    loss = ((X @ W + b - Y) ** 2).mean()
    loss.backward()
    W = W - lr * W.grad  # expect: TL404
    b = b.sub(lr * b.grad)  # expect: TL404
    print(epoch, loss.item())
