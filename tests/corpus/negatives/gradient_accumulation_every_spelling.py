# guards: TL301
"""Gradient accumulation, in the spellings seen in real training scripts.

Correct: each accumulator (``total``, ``loss_sum``, ``losses``, ``by_batch``)
is consumed by a later backward, which needs the graphs it holds; storing
``.detach()`` there (TL301's fix) would make that backward raise or silently
drop the accumulated terms.
"""
import torch


def accumulate_in_place(model, loader, optimizer, criterion, accum_steps=4):
    total = 0
    for i, (x, y) in enumerate(loader):
        total += criterion(model(x), y)
        if (i + 1) % accum_steps == 0:
            optimizer.zero_grad()
            total.backward()
            optimizer.step()
            total = 0


def accumulate_by_rebinding(model, batches, optimizer, criterion, epochs):
    for epoch in range(epochs):
        optimizer.zero_grad()
        total = 0
        for x, y in batches:
            total = total + criterion(model(x), y)
        total.backward()
        optimizer.step()


def accumulate_then_average(model, loader, optimizer, criterion):
    optimizer.zero_grad()
    loss_sum, n = 0, 0
    for x, y in loader:
        l = criterion(model(x), y)
        loss_sum += l
        n += 1
    (loss_sum / n).backward()
    optimizer.step()


def stack_and_sum(model, loader, optimizer, criterion):
    optimizer.zero_grad()
    losses = []
    for x, y in loader:
        l = criterion(model(x), y)
        losses.append(l)
    torch.stack(losses).sum().backward()
    optimizer.step()


def builtin_sum(model, loader, optimizer, criterion):
    optimizer.zero_grad()
    losses = []
    for x, y in loader:
        losses.append(criterion(model(x), y))
    sum(losses).backward()
    optimizer.step()


def sum_of_dict_values(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        optimizer.zero_grad()
        by_batch = {}
        for i, (x, y) in enumerate(loader):
            by_batch[i] = criterion(model(x), y)
        sum(by_batch.values()).backward()
        optimizer.step()


def update(loss, optimizer):
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def backward_in_a_helper(model, loader, optimizer, criterion):
    for epoch in range(10):
        total = 0
        for x, y in loader:
            total += criterion(model(x), y)
        update(total / len(loader), optimizer)
