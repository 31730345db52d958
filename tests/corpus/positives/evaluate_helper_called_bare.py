"""TL101: an ``evaluate()`` helper that is called without ``torch.no_grad()``.

The only call site, inside ``fit``, calls ``evaluate(model, val_loader)``
directly, so the model call in the helper runs with autograd enabled.
"""
import torch.nn.functional as F


def evaluate(model, loader):
    model.eval()
    total = 0.0
    for x, y in loader:
        out = model(x)  # expect: TL101
        total += F.cross_entropy(out, y).item()
    return total / len(loader)


def fit(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        val_loss = evaluate(model, val_loader)
        print(f"epoch {epoch}: val_loss={val_loss:.4f}")
    return model
