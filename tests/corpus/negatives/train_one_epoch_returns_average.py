# guards: TL301
"""``train_one_epoch`` returns ``total / n`` where total accumulated ``loss.item()``.

Correct: ``total`` and ``n`` are Python numbers; ``total += loss.item() * bs``
never holds a tensor, so nothing is kept across iterations.
"""
import torch.nn as nn


def train_one_epoch(model, data_loader, optimizer, device):
    criterion = nn.CrossEntropyLoss()
    model.train()
    total, n = 0.0, 0
    for images, labels in data_loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = criterion(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        bs = labels.size(0)
        total += loss.item() * bs
        n += bs
    return total / n
