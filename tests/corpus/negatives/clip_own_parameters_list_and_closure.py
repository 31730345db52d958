# guards: TL205
"""Stored parameters that are lists, and a clip inside a step closure.

Correct: ``Sequential.parameters()`` here is this file's own method and
returns a list, so ``parameters`` can be read by the optimizer and by every
clip; the LBFGS closure clears, runs backward and clips before the step that
calls it uses the gradients.
"""
import torch


class Linear:
    def __init__(self, fan_in, fan_out):
        self.weight = torch.randn(fan_in, fan_out, requires_grad=True)

    def __call__(self, x):
        return x @ self.weight

    def parameters(self):
        return [self.weight]


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def train(x, y, steps):
    model = Sequential([Linear(4, 8), Linear(8, 1)])
    parameters = model.parameters()
    optimizer = torch.optim.SGD(parameters, lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        torch.nn.utils.clip_grad_norm_(parameters, 1.0)
        optimizer.step()


def fit_lbfgs(model, x, y, steps):
    optimizer = torch.optim.LBFGS(model.parameters())

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
        return loss

    for _ in range(steps):
        optimizer.step(closure)
