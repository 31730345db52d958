# guards: TL102
"""``set_grad_enabled(is_train)`` around a shared step: backward only runs when the flag is on.

Correct: the flag is not a literal, so the region may record; torchlint
cannot tell, and the backward only runs in the training phase anyway.
"""
import torch


def run_epoch(model, loader, criterion, optimizer, is_train):
    model.train(is_train)
    total = 0.0
    with torch.set_grad_enabled(is_train):
        for x, y in loader:
            loss = criterion(model(x), y)
            if is_train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total / max(len(loader), 1)


def fit(model, train_loader, val_loader, criterion, optimizer, epochs):
    history = []
    for epoch in range(epochs):
        train_loss = run_epoch(model, train_loader, criterion, optimizer, True)
        val_loss = run_epoch(model, val_loader, criterion, optimizer, False)
        history.append((train_loss, val_loss))
    return history
