"""Variants of TL203: a generator or actor loss backpropagated through a forward pass made before another optimizer's step.

A GAN class whose optimizers are built in ``__init__`` (``self.opt_D``), the
MorvanZhou tutorial GAN (``D_loss`` and ``G_loss`` share ``prob_artist1``), and
mixed precision (``scaler.step(opt_d)`` between the scaled backwards).
"""
import torch
import torch.nn as nn


class GAN(nn.Module):
    def __init__(self, G, D):
        super().__init__()
        self.netG, self.netD = G, D
        self.opt_D = torch.optim.Adam(self.netD.parameters())
        self.opt_G = torch.optim.Adam(self.netG.parameters())

    def step(self, real, z, bce):
        fake = self.netG(z)
        pred_fake = self.netD(fake)
        loss_D = bce(self.netD(real), torch.ones(8, 1)) + bce(self.netD(fake.detach()), torch.zeros(8, 1))
        loss_G = bce(pred_fake, torch.ones(8, 1))
        self.opt_D.zero_grad()
        loss_D.backward()
        self.opt_D.step()
        self.opt_G.zero_grad()
        loss_G.backward()  # expect: TL203
        self.opt_G.step()


def morvan(G, D, opt_D, opt_G, artist_works, n):
    for step in range(100):
        G_paintings = G(torch.randn(64, n))
        prob_artist0 = D(artist_works())
        prob_artist1 = D(G_paintings)  # expect: TL405
        D_loss = - torch.mean(torch.log(prob_artist0) + torch.log(1. - prob_artist1))
        G_loss = torch.mean(torch.log(1. - prob_artist1))
        opt_D.zero_grad()
        D_loss.backward(retain_graph=True)
        opt_D.step()
        opt_G.zero_grad()
        G_loss.backward()  # expect: TL203
        opt_G.step()


def amp_gan(G, D, opt_d, opt_g, scaler, real, z, bce):
    fake = G(z)
    logits = D(fake)
    d_loss = bce(D(real), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))
    g_loss = bce(logits, torch.ones(8, 1))
    scaler.scale(d_loss).backward()
    scaler.step(opt_d)
    scaler.scale(g_loss).backward()  # expect: TL203
    scaler.step(opt_g)
    scaler.update()
