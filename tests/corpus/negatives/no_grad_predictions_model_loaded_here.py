# guards: TL101 TL103
"""An export script loads a fresh model for predictions; training lives elsewhere in the file.

Correct for TL103: the model evaluated under no_grad is built and loaded in
the evaluating function, so it is that function's business (here a
deterministic model without dropout or batch-norm), and the trained model
is never evaluated without ``eval()``.
"""
import torch
from torch import nn


def build_model():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))


def train(model, train_loader, epochs):
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    torch.save(model.state_dict(), "model.pt")


def export_test_predictions(test_loader, path="model.pt"):
    model = build_model()
    model.load_state_dict(torch.load(path, weights_only=True))
    rows = []
    with torch.no_grad():
        for x, _ in test_loader:
            rows.extend(model(x).argmax(1).tolist())
    return rows
