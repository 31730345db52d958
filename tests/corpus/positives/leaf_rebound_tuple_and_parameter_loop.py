"""Manual SGD in a class (tuple rebinding) and over a model's parameters."""
import torch
import torch.nn.functional as F


class LogisticRegression:
    def __init__(self, features, lr=0.1):
        self.w = torch.zeros(features, 1, requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)
        self.lr = lr

    def fit(self, x, y, epochs):
        for _ in range(epochs):
            loss = F.binary_cross_entropy_with_logits(x @ self.w + self.b, y)
            loss.backward()
            self.w, self.b = self.w - self.lr * self.w.grad, self.b - self.lr * self.b.grad  # expect: TL404


def train(model, loader, lr):
    for x, y in loader:
        model.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        for param in model.parameters():
            param = param - lr * param.grad  # expect: TL404
