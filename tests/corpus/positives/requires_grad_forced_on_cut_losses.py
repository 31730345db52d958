"""Losses whose graph was cut, "fixed" by forcing requires_grad."""
import torch
import torch.nn.functional as F
from torch import nn


def train(model, loader, optimizer, device):
    criterion = nn.CrossEntropyLoss()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        preds = torch.argmax(logits, dim=1).float()
        loss = F.mse_loss(preds, labels.float())
        loss.requires_grad = True  # expect: TL403
        aux = criterion(logits.detach(), labels)
        aux.requires_grad_(True)  # expect: TL403
        total_loss = loss + 0.1 * aux
        total_loss.requires_grad_()  # expect: TL403
        optimizer.zero_grad()
        total_loss.backward()
        optimizer.step()
