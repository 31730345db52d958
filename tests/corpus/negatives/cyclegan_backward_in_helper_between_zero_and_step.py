# guards: TL202
"""CycleGAN-style step: the discriminator's backward runs in a helper between its zero_grad() and step()."""
import torch
from torch import nn


class CycleGANModel:
    def __init__(self, netG, netD, lr=2e-4):
        self.netG, self.netD = netG, netD
        self.optimizer_G = torch.optim.Adam(netG.parameters(), lr=lr)
        self.optimizer_D = torch.optim.Adam(netD.parameters(), lr=lr)
        self.criterion = nn.MSELoss()

    def backward_D(self, real, fake):
        loss_real = self.criterion(self.netD(real), torch.ones(real.size(0), 1))
        loss_fake = self.criterion(self.netD(fake.detach()), torch.zeros(real.size(0), 1))
        loss_D = (loss_real + loss_fake) * 0.5
        loss_D.backward()
        return loss_D

    def optimize_parameters(self, real, z):
        fake = self.netG(z)
        self.optimizer_G.zero_grad()
        loss_G = self.criterion(self.netD(fake), torch.ones(real.size(0), 1))
        loss_G.backward()
        self.optimizer_G.step()
        self.optimizer_D.zero_grad()
        self.backward_D(real, fake)
        self.optimizer_D.step()


def train(model, loader, epochs):
    for epoch in range(epochs):
        for real, z in loader:
            model.optimize_parameters(real, z)
