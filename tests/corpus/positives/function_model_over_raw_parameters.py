"""TL101 for a model written as a function over tensors trained by hand.

``net`` computes ``x @ W1 + b1`` with tensors made with ``requires_grad=True``: each call
records a graph as a module's forward does. After training, the script predicts point by
point and measures accuracy over held-out batches with grad on."""
import torch
import torch.nn.functional as F

W1 = torch.randn(2, 16, requires_grad=True)
b1 = torch.zeros(16, requires_grad=True)
W2 = torch.randn(16, 2, requires_grad=True)
b2 = torch.zeros(2, requires_grad=True)
params = [W1, b1, W2, b2]


def net(x):
    h = torch.relu(x @ W1 + b1)
    return h @ W2 + b2


def loss_fn(x, y):
    return F.cross_entropy(net(x), y)


def accuracy(batches):
    correct = total = 0
    for xb, yb in batches:
        correct += (net(xb).argmax(1) == yb).sum().item()  # expect: TL101
        total += len(yb)
    return correct / total


X = torch.randn(200, 2)
y = (X.sum(1) > 0).long()
X_test = torch.randn(50, 2)
y_test = (X_test.sum(1) > 0).long()
for epoch in range(100):
    loss = loss_fn(X, y)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= 0.1 * p.grad

print(accuracy(zip(X_test.split(10), y_test.split(10))))
for point in [[0.5, 0.2], [-1.0, 0.3], [0.1, -0.9]]:
    probs = net(torch.tensor([point])).softmax(1)  # expect: TL101
    print(point, probs[0, 1].item())
