# guards: TL405
"""StyleGAN2-style loop: requires_grad toggled instead of detach.

Correct: before the discriminator step the generator is frozen with
``requires_grad(generator, False)``, so ``discriminator(fake_img)`` without
``detach()`` builds no graph into the generator.
"""
import torch
from torch.nn import functional as F


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def train(loader, generator, discriminator, g_optim, d_optim, latent, iters):
    for idx in range(iters):
        real_img = next(loader)
        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = torch.randn(real_img.size(0), latent, device=real_img.device)
        fake_img, _ = generator(noise)
        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img)
        d_loss = F.softplus(fake_pred).mean() + F.softplus(-real_pred).mean()
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        requires_grad(generator, True)
        requires_grad(discriminator, False)
        fake_img, _ = generator(noise)
        g_loss = F.softplus(-discriminator(fake_img)).mean()
        generator.zero_grad()
        g_loss.backward()
        g_optim.step()
