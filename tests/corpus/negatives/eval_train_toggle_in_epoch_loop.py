# guards: TL101 TL104
"""``model.eval()`` for validation at the end of each epoch, ``model.train()`` at the start.

Correct: inside the epoch loop, the training forward passes come textually
before ``model.eval()`` but always run after ``model.train()`` at the top of
the iteration, so they are training code.  The validation forward passes
after ``model.eval()`` are under ``torch.no_grad()``.
"""
import torch


def fit(model, train_loader, val_loader, optimizer, criterion, epochs, device):
    best = float("inf")
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()

        model.eval()
        val_loss = 0.0
        with torch.no_grad():
            for x, y in val_loader:
                x, y = x.to(device), y.to(device)
                val_loss += criterion(model(x), y).item()
        val_loss /= len(val_loader)
        if val_loss < best:
            best = val_loss
            torch.save(model.state_dict(), "best.pt")
    return best
