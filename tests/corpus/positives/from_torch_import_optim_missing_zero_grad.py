"""TL201 with ``from torch import nn, optim``: no zero_grad in the loop.

The optimizer is built as ``optim.Adam(...)``; the loop calls backward and
``optimizer.step()`` but never clears gradients.
"""
from torch import nn, optim


def train(model, train_loader, epochs, lr=1e-3):
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        running = 0.0
        for inputs, labels in train_loader:
            outputs = model(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()  # expect: TL201
            running += loss.item()
        print(f"epoch {epoch}: {running / len(train_loader):.4f}")
    return model
