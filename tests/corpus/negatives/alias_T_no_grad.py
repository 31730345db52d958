# guards: TL101 TL301
"""Validation under ``with T.no_grad():`` where torch is imported as ``T``.

Correct: ``T`` is ``torch``, so ``T.no_grad()`` disables autograd for the
validation loop that follows ``net.eval()``; the training loop zeroes
gradients before backward and logs with ``.item()``.
"""
import torch as T
import torch.nn as nn


def run(net, train_loader, val_loader, epochs, lr=1e-3):
    optimizer = T.optim.AdamW(net.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        net.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            optimizer.step()

        net.eval()
        val_loss = 0.0
        with T.no_grad():
            for x, y in val_loader:
                out = net(x)
                val_loss += loss_fn(out, y).item()
        print(f"epoch {epoch}: val_loss={val_loss / len(val_loader):.4f}")
    return net
