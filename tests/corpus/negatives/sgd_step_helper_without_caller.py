# guards: TL404
"""An optimizer-like helper in a library module: grad mode is the caller's.

Correct as far as this file shows: ``sgd_update`` and ``Trainer.step`` do
not backpropagate and have no caller here; the training scripts call them
under ``torch.no_grad()``, so the rebinding builds no graph.
"""
import torch


def sgd_update(params, lr):
    return [p - lr * p.grad for p in params]


class Trainer:
    def __init__(self, w, b, lr):
        self.w, self.b, self.lr = w, b, lr

    def step(self):
        self.w = self.w - self.lr * self.w.grad
        self.b = self.b - self.lr * self.b.grad
        self.w.requires_grad_()
        self.b.requires_grad_()
