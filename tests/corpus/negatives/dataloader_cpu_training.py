# guards: TL601
"""A CPU-only training script: loading in the main process costs nothing to wait for."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    x, y = torch.randn(512, 8), torch.randn(512, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x_batch, y_batch in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x_batch), y_batch).backward()
        optimizer.step()
    return model
