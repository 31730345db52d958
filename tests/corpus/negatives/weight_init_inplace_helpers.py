# guards: TL401
"""Weight initialisation with ``nn.init.*_`` and in-place fills under no_grad.

Correct: ``nn.init`` functions run under ``torch.no_grad()`` internally, and
the explicit ``m.weight.fill_(1)`` / ``m.bias.zero_()`` calls are wrapped in
``with torch.no_grad():``.  The module also contains a normal training loop,
which touches parameters only through the optimizer.
"""
import torch
import torch.nn as nn


def init_weights(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
        with torch.no_grad():
            m.weight.fill_(1)
            m.bias.zero_()
    elif isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0, 0.01)
        nn.init.constant_(m.bias, 0)


def build_and_train(model, loader, epochs, device):
    model.apply(init_weights)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    return model
