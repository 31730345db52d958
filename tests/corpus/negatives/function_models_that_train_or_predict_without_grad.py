# guards: TL101
"""Models written as functions over tensors trained by hand, used correctly.

``loss_fn`` hands its graph back for the backward; ``sgd_step`` backpropagates itself, so
calling it is training; predictions run under ``torch.no_grad()``; ``plot_fit`` draws one
curve once, after training (a single forward, no evaluation loop)."""
import torch
import torch.nn.functional as F

w = torch.zeros(3, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)


def model(x):
    return x @ w + b


def loss_fn(x, y):
    return F.mse_loss(model(x), y)


def sgd_step(x, y, lr=0.05):
    loss = F.mse_loss(x @ w + b, y)
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            p -= lr * p.grad
            p.grad = None
    return loss.item()


def plot_fit(xs):
    import matplotlib.pyplot as plt

    plt.plot(xs[:, 0].numpy(), model(xs).detach().numpy())


X = torch.randn(100, 3)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
for epoch in range(50):
    loss = loss_fn(X, Y)
    loss.backward()
    with torch.no_grad():
        w -= 0.05 * w.grad
        b -= 0.05 * b.grad
        w.grad = None
        b.grad = None
for epoch in range(50):
    print(sgd_step(X, Y))

with torch.no_grad():
    for row in X[:5]:
        print(model(row[None]).item())
plot_fit(X)
