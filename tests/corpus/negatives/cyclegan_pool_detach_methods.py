# guards: TL405
"""CycleGAN-style model: fakes made in forward(), discriminators in their own methods.

Correct: ``backward_D_basic`` runs the discriminator on ``fake.detach()``;
the fakes come from an image pool (a function torchlint cannot read); the
generator's backward uses the fakes with their graph, as it must.
"""
import torch


class CycleGANModel:
    def __init__(self, netG_A, netG_B, netD_A, netD_B, optimizer_G, optimizer_D, criterionGAN, pools):
        self.netG_A, self.netG_B = netG_A, netG_B
        self.netD_A, self.netD_B = netD_A, netD_B
        self.optimizer_G, self.optimizer_D = optimizer_G, optimizer_D
        self.criterionGAN = criterionGAN
        self.fake_A_pool, self.fake_B_pool = pools

    def forward(self, real_A, real_B):
        self.real_A, self.real_B = real_A, real_B
        self.fake_B = self.netG_A(real_A)
        self.fake_A = self.netG_B(real_B)

    def backward_D_basic(self, netD, real, fake):
        loss_D_real = self.criterionGAN(netD(real), True)
        loss_D_fake = self.criterionGAN(netD(fake.detach()), False)
        loss_D = (loss_D_real + loss_D_fake) * 0.5
        loss_D.backward()
        return loss_D

    def backward_G(self):
        loss_G = self.criterionGAN(self.netD_A(self.fake_B), True) + self.criterionGAN(self.netD_B(self.fake_A), True)
        loss_G.backward()

    def optimize_parameters(self, real_A, real_B):
        self.forward(real_A, real_B)
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()
        self.optimizer_D.zero_grad()
        fake_B = self.fake_B_pool.query(self.fake_B)
        self.backward_D_basic(self.netD_A, self.real_B, fake_B)
        fake_A = self.fake_A_pool.query(self.fake_A)
        self.backward_D_basic(self.netD_B, self.real_A, fake_A)
        self.optimizer_D.step()
