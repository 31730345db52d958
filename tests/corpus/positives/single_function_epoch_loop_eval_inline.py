"""One training function: model.train() once before the epochs, eval() inline each epoch."""
import torch
import torch.nn.functional as F


def fit(model, train_loader, val_loader, optimizer, epochs, device="cpu"):
    model.to(device)
    model.train()
    best = 0.0
    for epoch in range(epochs):
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        model.eval()  # expect: TL104
        correct = 0
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
        best = max(best, correct / len(val_loader.dataset))
    return best
