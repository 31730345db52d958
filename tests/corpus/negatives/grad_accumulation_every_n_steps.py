# guards: TL201
"""Gradient accumulation: zero_grad() runs only every ``accum_steps`` batches.

Correct: gradients are deliberately accumulated over ``accum_steps``
micro-batches; ``optimizer.step()`` and ``optimizer.zero_grad()`` both run
inside the same ``if (i + 1) % accum_steps == 0:`` block, so every step
uses exactly one accumulation window and the window is cleared afterwards.
The loss is divided before backward() and logged with ``.item()``.
"""
from torch import nn


def train_one_epoch(model, train_loader, optimizer, criterion, device, accum_steps=4):
    model.train()
    optimizer.zero_grad()
    running = 0.0
    for i, (images, targets) in enumerate(train_loader):
        images, targets = images.to(device), targets.to(device)
        outputs = model(images)
        loss = criterion(outputs, targets) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad()
        running += loss.item() * accum_steps
    return running / len(train_loader)
