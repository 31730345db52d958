# guards: TL405
"""A GAN whose discriminator loss backpropagates only into the discriminator.

Correct: ``d_loss.backward(inputs=list(D.parameters()))`` accumulates
gradients into the discriminator's parameters only; the generator's graph
behind ``fake`` is walked but nothing is written into ``G``'s gradients, so
the fake need not be detached. The generator step then reuses ``fake``.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

G = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)


def real_batch(n=64):
    return torch.randn(n, 2) * 0.5 + 1.0


for step in range(1000):
    real = real_batch()
    z = torch.randn(real.size(0), 16)
    fake = G(z)

    opt_d.zero_grad()
    d_real = D(real)
    d_fake = D(fake)
    d_loss = F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real)) + \
        F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
    d_loss.backward(inputs=list(D.parameters()))
    opt_d.step()

    opt_g.zero_grad()
    g_out = D(fake)
    g_loss = F.binary_cross_entropy_with_logits(g_out, torch.ones_like(g_out))
    g_loss.backward()
    opt_g.step()
