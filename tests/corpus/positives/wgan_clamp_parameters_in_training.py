"""TL401: WGAN weight clipping with ``p.clamp_()`` on live parameters.

The critic's parameters are clamped in place right after its optimizer step,
with autograd enabled (no ``torch.no_grad()``, no ``.data``), inside a loop
that calls backward: PyTorch raises for an in-place op on a leaf that
requires grad.
"""
import torch


def train(netG, netD, dataloader, optimizerD, optimizerG, nz, epochs, clip_value=0.01, n_critic=5, device="cpu"):
    for epoch in range(epochs):
        for i, (real, _) in enumerate(dataloader):
            real = real.to(device)
            optimizerD.zero_grad()
            z = torch.randn(real.size(0), nz, device=device)
            fake = netG(z).detach()
            loss_D = -torch.mean(netD(real)) + torch.mean(netD(fake))
            loss_D.backward()
            optimizerD.step()

            for p in netD.parameters():
                p.clamp_(-clip_value, clip_value)  # expect: TL401

            if i % n_critic == 0:
                optimizerG.zero_grad()
                gen_imgs = netG(z)
                loss_G = -torch.mean(netD(gen_imgs))
                loss_G.backward()
                optimizerG.step()
    return netG, netD
