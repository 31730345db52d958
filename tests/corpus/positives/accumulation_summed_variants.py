"""Gradient accumulation that sums k micro-batches into one SGD step: with a GradScaler, under
autocast, behind ``not step % k``, with a counter compared by ``>=``, and in a nanoGPT-style
inner loop of micro-steps over a loader."""
import torch
import torch.nn as nn
from torch import optim

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
criterion = nn.CrossEntropyLoss()


def amp(loader, accum):
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler()
    for step, (x, y) in enumerate(loader, 1):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()  # expect: TL207
        if not step % accum:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


def counter(loader, accum):
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    seen = 0
    for x, y in loader:
        outputs = model(x)
        loss = criterion(outputs, y) + 0.01 * outputs.pow(2).mean()
        loss.backward()  # expect: TL207
        seen = seen + 1
        if seen >= accum:
            optimizer.step()
            optimizer.zero_grad()
            seen = 0


def micro_steps(train_loader, steps):
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss.backward()  # expect: TL207
        optimizer.step()
