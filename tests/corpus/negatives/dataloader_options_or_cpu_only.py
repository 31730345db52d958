# guards: TL601
"""DataLoaders with their throughput options set, forwarded, or in CPU-only training."""
import torch
from torch import nn
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_loaders(train_set, val_set, loader_kwargs):
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8, pin_memory=True)
    val_loader = DataLoader(val_set, batch_size=256, **loader_kwargs)
    return train_loader, val_loader


def train(model, loader, optimizer):
    model.to(device)
    loss_fn = nn.CrossEntropyLoss()
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
