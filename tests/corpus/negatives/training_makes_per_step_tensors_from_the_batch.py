# guards: TL604
"""Tensors a training step makes afresh because their values change every step.

The noise of a GAN's generator is new on every step (``torch.randn``), the
lengths come from the batch, and the positions are made on the batch's own
device (``device=x.device``): none is a loop-invariant tensor copied from
the host. The class weights are copied to the device once, before the loop.
"""
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(generator, discriminator, embed, loader, opt_g, weights, nz=100):
    class_weights = torch.tensor(weights).to(device)
    criterion = nn.CrossEntropyLoss(weight=class_weights)
    for tokens, lengths, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        noise = torch.randn(tokens.size(0), nz).to(device)
        lengths = torch.as_tensor(lengths).to(device)
        positions = torch.arange(tokens.size(1), device=tokens.device)
        features = embed(tokens) + embed(positions)[None] + generator(noise)[:, None]
        logits = discriminator(features, lengths)
        loss = criterion(logits, labels)
        opt_g.zero_grad()
        loss.backward()
        opt_g.step()
