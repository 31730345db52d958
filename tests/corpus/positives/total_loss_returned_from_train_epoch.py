"""TL301: ``total_loss += loss`` accumulates graph-carrying tensors.

``total_loss`` starts as ``0`` before the loop and becomes a tensor that
references every batch's graph until ``train_epoch`` returns
``total_loss / len(loader)``.
"""


def train_epoch(model, loader, optimizer, criterion, device):
    model.train()
    total_loss = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss  # expect: TL301
    return total_loss / len(loader)
