# guards: TL508 TL509
"""``torch.compile`` used as meant, and loops that compile on purpose.

Correct: ``model.compile()`` compiles in place; ``torch.compile``'s result
is kept; a loop compiles each block of the model (regional compilation), or
each mode to compare, or resets dynamo to time a cold compile; a module
compiles its block lazily, once, behind ``if``; a decorator factory.
"""
import time

import torch
import torch._dynamo
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self._fast = None

    def forward(self, x):
        if self._fast is None:
            self._fast = torch.compile(self.fc)
        return x + self._fast(x)


@torch.compile(dynamic=False)
def scale(x):
    return x * 2


model = nn.Sequential(*[Block() for _ in range(4)])
for i, block in enumerate(model):
    model[i] = torch.compile(block)
head = nn.Linear(16, 2)
head.compile()
loss_fn = torch.compile(nn.functional.cross_entropy)
x = torch.randn(8, 16)
for mode in ("default", "reduce-overhead", "max-autotune"):
    compiled = torch.compile(model, mode=mode)
    compiled(x)
for _ in range(3):
    torch._dynamo.reset()
    start = time.perf_counter()
    torch.compile(model)(x)
    print(time.perf_counter() - start)
print(loss_fn(head(scale(model(x))), torch.zeros(8, dtype=torch.long)))
