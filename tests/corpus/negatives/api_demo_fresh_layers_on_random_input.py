# guards: TL101
"""A tutorial notebook's API tour: random input through freshly built layers.

Correct: no trained model is evaluated here. Each cell builds a layer and
pushes ``torch.randn`` through it to show the output shape or a value; there
is no ``eval()``, no checkpoint, no data set. The graphs are a few tensors
and die with the cell, and showing ``grad_fn`` is part of the lesson.
"""
import torch
import torch.nn as nn

x = torch.randn(1, 3, 32, 32)
out = nn.Conv2d(3, 8, 3)(x)
print(out.shape, out.grad_fn)

conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
pool = nn.MaxPool2d(2)
for size in (16, 32, 64):
    y = pool(conv(torch.randn(2, 3, size, size)))
    print(size, "->", tuple(y.shape))

layers = [nn.Linear(10, 4), nn.Conv1d(4, 4, 3), nn.LSTM(10, 20, batch_first=True)]
for layer in layers:
    if isinstance(layer, nn.LSTM):
        output, (h, c) = layer(torch.randn(5, 7, 10))
        print(type(layer).__name__, output.shape, h.shape)
    elif isinstance(layer, nn.Conv1d):
        print(type(layer).__name__, layer(torch.randn(2, 4, 9)).shape)
    else:
        print(type(layer).__name__, layer(torch.randn(3, 10)).argmax(dim=1).tolist())

net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
for batch in range(3):
    logits = net(torch.randn(4, 3, 32, 32))
    print(batch, logits.softmax(dim=1).max(dim=1).values.tolist())
