# guards: TL405
"""Lightning GAN with manual optimization and toggle_optimizer.

Correct: ``toggle_optimizer(opt_d)`` sets ``requires_grad=False`` on every
parameter the discriminator's optimizer does not own (the generator's), so
the fake generated again under it, and ``self.discriminator(fake)`` in the
discriminator step, build no graph into the generator. (Reusing the ``fake``
made before ``opt_g.step()`` would not be correct: its graph into the
generator was freed by the generator's backward, and TL203 reports it.)
"""
import pytorch_lightning as pl
import torch
import torch.nn.functional as F


class GAN(pl.LightningModule):
    def __init__(self, generator, discriminator, latent_dim=100):
        super().__init__()
        self.generator = generator
        self.discriminator = discriminator
        self.latent_dim = latent_dim
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        imgs, _ = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(imgs.shape[0], self.latent_dim, device=self.device)
        fake = self.generator(z)

        self.toggle_optimizer(opt_g)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake), torch.ones_like(fake[:, :1]))
        self.manual_backward(g_loss)
        opt_g.step()
        opt_g.zero_grad()
        self.untoggle_optimizer(opt_g)

        self.toggle_optimizer(opt_d)
        fake = self.generator(z)
        real_loss = F.binary_cross_entropy_with_logits(self.discriminator(imgs), torch.ones_like(imgs[:, :1]))
        fake_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake), torch.zeros_like(fake[:, :1]))
        d_loss = (real_loss + fake_loss) / 2
        self.manual_backward(d_loss)
        opt_d.step()
        opt_d.zero_grad()
        self.untoggle_optimizer(opt_d)

    def configure_optimizers(self):
        return [torch.optim.Adam(self.generator.parameters()), torch.optim.Adam(self.discriminator.parameters())]
