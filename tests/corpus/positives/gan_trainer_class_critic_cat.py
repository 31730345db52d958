"""A GAN trainer class: the critic scores real and fake together, fake undetached."""
import torch
import torch.nn.functional as F


class GANTrainer:
    def __init__(self, G, D, opt_G, opt_D, latent_dim):
        self.G, self.D = G, D
        self.opt_G, self.opt_D = opt_G, opt_D
        self.latent_dim = latent_dim

    def discriminator_step(self, real):
        z = torch.randn(real.size(0), self.latent_dim, device=real.device)
        fake = self.G(z)
        logits = self.D(torch.cat([real, fake], dim=0))  # expect: TL405
        labels = torch.cat([torch.ones(real.size(0)), torch.zeros(real.size(0))]).to(real.device)
        loss_D = F.binary_cross_entropy_with_logits(logits.squeeze(1), labels)
        self.opt_D.zero_grad()
        loss_D.backward()
        self.opt_D.step()
        return loss_D.item()

    def generator_step(self, batch_size, device):
        z = torch.randn(batch_size, self.latent_dim, device=device)
        loss_G = F.softplus(-self.D(self.G(z))).mean()
        self.opt_G.zero_grad()
        loss_G.backward()
        self.opt_G.step()
        return loss_G.item()
