# guards: TL203
"""Correct GAN and actor-critic updates: every backward after a step runs through a fresh forward pass.

The DCGAN order (``netD(fake)`` recomputed after ``optimizerD.step()``), a WGAN
critic loop, a D/G step chosen by a branch (never both in one iteration), two
losses through one graph before the only step, DDPG (the actor loss calls the
critic again), A2C with a detached advantage, a target network under
``no_grad``, pix2pix, whose backward passes live in helpers, and an ESRGAN
warm-up branch that steps the generator and ``continue``s before the
adversarial losses reuse its output.
"""
import torch
import torch.nn as nn
import torch.optim as optim


def dcgan(netG, netD, dataloader, device, nz=100):
    criterion = nn.BCELoss()
    optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    for epoch in range(5):
        for i, data in enumerate(dataloader, 0):
            netD.zero_grad()
            real_cpu = data[0].to(device)
            b_size = real_cpu.size(0)
            label = torch.full((b_size,), 1.0, device=device)
            output = netD(real_cpu).view(-1)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()
            noise = torch.randn(b_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(0.0)
            output = netD(fake.detach()).view(-1)
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            optimizerD.step()
            netG.zero_grad()
            label.fill_(1.0)
            output = netD(fake).view(-1)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()


def wgan_gp(G, D, loader, opt_g, opt_d, n_critic=5):
    for real in loader:
        for _ in range(n_critic):
            z = torch.randn(real.size(0), 128)
            fake = G(z).detach()
            d_loss = D(fake).mean() - D(real).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
        g_loss = -D(G(torch.randn(real.size(0), 128))).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()


def alternating(G, D, loader, opt_g, opt_d, bce):
    for i, real in enumerate(loader):
        fake = G(torch.randn(8, 4))
        out = D(fake)
        if i % 2 == 0:
            opt_d.zero_grad()
            d_loss = bce(D(real), torch.ones(8, 1))
            d_loss.backward()
            opt_d.step()
        else:
            opt_g.zero_grad()
            g_loss = bce(out, torch.ones_like(out))
            g_loss.backward()
            opt_g.step()


def two_heads(model, loader, optimizer, criterion):
    for x, y in loader:
        out = model(x)
        loss1 = criterion(out, y)
        loss1.backward(retain_graph=True)
        loss2 = out.abs().mean()
        loss2.backward()
        optimizer.step()
        optimizer.zero_grad()


def ddpg(actor, critic, actor_optimizer, critic_optimizer, state, action, target_q):
    current_q = critic(state, action)
    critic_loss = ((current_q - target_q) ** 2).mean()
    critic_optimizer.zero_grad()
    critic_loss.backward()
    critic_optimizer.step()
    actor_loss = -critic(state, actor(state)).mean()
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()


def a2c_detached(actor, critic, states, returns, log_probs):
    actor_opt = torch.optim.Adam(actor.parameters())
    critic_opt = torch.optim.Adam(critic.parameters())
    values = critic(states).squeeze(-1)
    advantage = (returns - values).detach()
    critic_loss = (returns - values).pow(2).mean()
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()
    actor_loss = -(log_probs * advantage).mean()
    actor_opt.zero_grad()
    actor_loss.backward()
    actor_opt.step()


def target_net_dqn(policy_net, target_net, optimizer, s, a, r, s2, aux_opt, aux_head):
    with torch.no_grad():
        next_q = target_net(s2).max(1)[0]
    q = policy_net(s).gather(1, a)
    loss = ((q.squeeze() - (r + 0.99 * next_q)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    aux = aux_head(next_q.unsqueeze(1)).mean()
    aux_opt.zero_grad()
    aux.backward()
    aux_opt.step()


class Pix2Pix(nn.Module):
    def optimize_parameters(self):
        self.fake_B = self.netG(self.real_A)
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()

    def backward_D(self):
        pred_fake = self.netD(self.fake_B.detach())
        self.loss_D = self.criterionGAN(pred_fake, False)
        self.loss_D.backward()

    def backward_G(self):
        pred_fake = self.netD(self.fake_B)
        self.loss_G = self.criterionGAN(pred_fake, True)
        self.loss_G.backward()


def esrgan_warmup(generator, discriminator, loader, optimizer_G, optimizer_D, criterion_pixel, criterion_GAN, warmup):
    for i, (imgs_lr, imgs_hr) in enumerate(loader):
        optimizer_G.zero_grad()
        gen_hr = generator(imgs_lr)
        loss_pixel = criterion_pixel(gen_hr, imgs_hr)
        if i < warmup:
            loss_pixel.backward()
            optimizer_G.step()
            continue  # the adversarial part below never runs after this step
        pred_fake = discriminator(gen_hr)
        loss_G = criterion_GAN(pred_fake, torch.ones_like(pred_fake)) + loss_pixel
        loss_G.backward()
        optimizer_G.step()
        optimizer_D.zero_grad()
        loss_D = criterion_GAN(discriminator(gen_hr.detach()), torch.zeros(len(imgs_lr), 1))
        loss_D.backward()
        optimizer_D.step()
