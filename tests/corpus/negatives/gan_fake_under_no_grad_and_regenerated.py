# guards: TL405
"""Vanilla GAN step: the discriminator's fake is made under no_grad.

Correct: ``fake = generator(z)`` for the discriminator runs under
``torch.no_grad()``, so ``d_loss.backward()`` cannot reach the generator;
the generator step makes a new fake with the graph and runs ``D`` on it
for ``g_loss``, followed by the generator's optimizer.
"""
import torch
import torch.nn.functional as F


def train_step(generator, discriminator, opt_gen, opt_disc, real, latent_dim):
    z = torch.randn(real.size(0), latent_dim, device=real.device)
    with torch.no_grad():
        fake = generator(z)
    real_logits = discriminator(real)
    fake_logits = discriminator(fake)
    d_loss = F.softplus(-real_logits).mean() + F.softplus(fake_logits).mean()
    opt_disc.zero_grad()
    d_loss.backward()
    opt_disc.step()

    fake = generator(z)
    g_loss = F.softplus(-discriminator(fake)).mean()
    opt_gen.zero_grad()
    g_loss.backward()
    opt_gen.step()
    return d_loss.item(), g_loss.item()
