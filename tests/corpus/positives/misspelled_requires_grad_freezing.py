"""Freezing and unfreezing with misspelled flags: nothing changes at run time.

A pretrained backbone frozen by ``require_grad``, an embedding kept fixed
through ``weight.requires_grads``, a parameter of one's own made with
``nn.Parameter`` frozen by ``requiresGrad``, and an input meant to need grad
for an adversarial step.
"""
import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, backbone, vocab, dim):
        super().__init__()
        self.backbone = backbone
        self.embedding = nn.Embedding(vocab, dim)
        self.embedding.weight.requires_grads = False  # expect: TL506
        self.scale = nn.Parameter(torch.ones(1))
        self.scale.requiresGrad = False  # expect: TL506
        for name, param in self.backbone.named_parameters():
            if not name.startswith("layer4"):
                param.require_grad = False  # expect: TL506

    def forward(self, x):
        return self.backbone(x) * self.scale


def fgsm(model, x, y, eps):
    x_adv = x.clone().detach()
    x_adv.require_grad = True  # expect: TL506
    loss = nn.functional.cross_entropy(model(x_adv), y)
    loss.backward()
    return x_adv + eps * x_adv.grad.sign()
