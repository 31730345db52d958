# guards: TL401
"""Original WGAN critic loop: weight clipping through ``p.data.clamp_()``.

Correct: ``p.data`` is a view of the parameter that does not require grad
and is not tracked by autograd, so clamping it in place is allowed (this is
the reference WGAN implementation).  The critic's gradients are cleared with
``netD.zero_grad()`` before each backward.
"""
import torch


def train_critic(netD, netG, data_iter, optimizerD, n_critic, nz, device, clamp_lower=-0.01, clamp_upper=0.01):
    for p in netD.parameters():
        p.requires_grad = True
    for _ in range(n_critic):
        for p in netD.parameters():
            p.data.clamp_(clamp_lower, clamp_upper)

        real, _ = next(data_iter)
        real = real.to(device)
        netD.zero_grad()
        errD_real = netD(real).mean()

        noise = torch.randn(real.size(0), nz, 1, 1, device=device)
        with torch.no_grad():
            fake = netG(noise)
        errD_fake = netD(fake).mean()
        errD = errD_fake - errD_real
        errD.backward()
        optimizerD.step()
    return errD.item()
