# guards: TL201 TL401
"""Clearing gradients by hand with ``for p in model.parameters(): p.grad = None``.

Correct: setting ``p.grad = None`` for every parameter is exactly what
``zero_grad(set_to_none=True)`` does, so the loop clears gradients each
iteration before backward.  Assigning ``.grad`` is not an in-place operation
on the parameter itself.
"""
import torch


def train(model, loader, optimizer, criterion, epochs, device):
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            for p in model.parameters():
                p.grad = None
            loss = criterion(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
            optimizer.step()
    return model
