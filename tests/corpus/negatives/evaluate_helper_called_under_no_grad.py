# guards: TL101
"""An ``evaluate()`` helper whose every call site is inside ``torch.no_grad()``.

Correct: ``evaluate`` itself has no no_grad block, but the only places in
this module that call it (after each epoch and once at the end) wrap the call
in ``with torch.no_grad():``, so its forward passes never record a graph.
"""
import torch
import torch.nn.functional as F


def evaluate(model, loader, device):
    model.eval()
    total_loss, correct, n = 0.0, 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        total_loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(dim=1) == y).sum().item()
        n += y.size(0)
    return total_loss / n, correct / n


def fit(model, train_loader, val_loader, test_loader, optimizer, epochs, device):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val_loss, val_acc = evaluate(model, val_loader, device)
        print(f"epoch {epoch}: val_loss={val_loss:.4f} val_acc={val_acc:.3f}")

    with torch.no_grad():
        test_loss, test_acc = evaluate(model, test_loader, device)
    return test_acc
