# guards: TL101
"""Validation under ``with no_grad():`` after ``from torch import no_grad``.

Correct: ``no_grad`` is ``torch.no_grad`` imported by name, so the validation
loop (after ``model.eval()``, iterating ``val_loader``) runs without autograd.
"""
from torch import nn, no_grad, optim


def validate(model, val_loader, criterion):
    model.eval()
    total = 0.0
    with no_grad():
        for inputs, labels in val_loader:
            outputs = model(inputs)
            total += criterion(outputs, labels).item()
    return total / len(val_loader)


def fit(model, train_loader, val_loader, epochs):
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(epochs):
        model.train()
        for inputs, labels in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
        print(epoch, validate(model, val_loader, criterion))
