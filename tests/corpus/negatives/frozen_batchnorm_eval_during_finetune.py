# guards: TL101 TL104
"""Fine-tuning with a frozen backbone: backbone BN layers kept in eval mode.

Correct: ``model.backbone.eval()`` only freezes batch-norm statistics, the
classifier still trains: the forward pass that follows is a training forward
whose loss is backpropagated and stepped.  Freezing parameters with
``p.requires_grad_(False)`` changes a flag, not tensor data.
"""
import torch
from torch import nn


def set_bn_eval(module):
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        module.eval()


def finetune(model, loader, epochs, device, lr=1e-3):
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.classifier.parameters(), lr=lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        model.backbone.eval()
        model.backbone.apply(set_bn_eval)
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            logits = model(images)
            loss = criterion(logits, labels)
            loss.backward()
            optimizer.step()
    return model
