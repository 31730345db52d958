# guards: TL403
"""Gradual unfreezing when fine-tuning a pretrained network.

Correct: ``requires_grad`` is switched on parameters and modules (the
model is built, not run: ``resnet50(weights=...)`` has no input), which is
how PyTorch freezes and unfreezes layers.
"""
import torch
from torch import nn
from torchvision import models


def build(num_classes):
    model = models.resnet50(weights="IMAGENET1K_V2")
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(model.fc.in_features, num_classes)
    return model


def unfreeze(model, epoch):
    if epoch == 3:
        model.layer4.requires_grad_(True)
    if epoch == 6:
        model.requires_grad_()
        for name, param in model.named_parameters():
            param.requires_grad = True


def train(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        unfreeze(model, epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
