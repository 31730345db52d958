# guards: TL102 TL401
"""The loss is computed with grad on; only bookkeeping around ``backward()`` is under no_grad.

Correct: grad mode decides whether operations are recorded, not whether a
recorded graph can be walked. The loss's graph was built outside the region,
so ``backward()`` inside it fills the gradients as usual, and the manual SGD
update under no_grad is how parameters are changed without recording.
"""
import torch


def train(model, loader, criterion, lr=0.1, epochs=1):
    for epoch in range(epochs):
        for x, y in loader:
            loss = criterion(model(x), y)
            model.zero_grad()
            with torch.no_grad():
                loss.backward()
                for p in model.parameters():
                    p -= lr * p.grad
    return model


def unrolled_loss(model, x, y, criterion):
    logits = model(x)
    return criterion(logits, y)


def meta_step(model, x, y, criterion):
    loss = unrolled_loss(model, x, y, criterion)
    with torch.no_grad():
        grads = torch.autograd.grad(loss, list(model.parameters()))
    return grads
