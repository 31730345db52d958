# guards: TL201
"""LBFGS training where zero_grad/backward live inside the closure.

Correct: ``optimizer.step(closure)`` re-evaluates the model several times per
step; the closure itself calls ``optimizer.zero_grad()`` before
``loss.backward()``, so gradients are cleared on every evaluation.  The loop
body therefore contains no backward() of its own and nothing is zeroed
between a backward and its step.
"""
from torch import nn, optim


def fit(model, inputs, targets, steps=20):
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(model.parameters(), lr=1, max_iter=20, history_size=10)
    history = []

    def closure():
        optimizer.zero_grad()
        out = model(inputs)
        loss = criterion(out, targets)
        loss.backward()
        return loss

    for i in range(steps):
        loss = optimizer.step(closure)
        history.append(loss.item())
        print(f"step {i}: loss {loss.item():.6f}")
    return history
