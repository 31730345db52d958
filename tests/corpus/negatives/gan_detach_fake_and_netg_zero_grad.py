# guards: TL202 TL301 TL405
"""DCGAN training step (after the PyTorch DCGAN tutorial).

Correct:
* the discriminator is trained on ``fake.detach()``, so D's backward does not
  reach into the generator;
* ``netG.zero_grad()`` runs between D's backward and ``optimizerD.step()``;
  it clears the *generator's* gradients only, D's freshly computed gradients
  are untouched, so this is not a zero_grad-before-step bug (TL202);
* D's gradients are cleared by ``netD.zero_grad()`` at the top of each
  iteration (a module's zero_grad counts as clearing, TL201);
* ``errD_real`` and ``errD_fake`` come from two separate graphs, so two plain
  backward() calls need no retain_graph;
* ``label.fill_()`` is in place on a plain tensor that does not require grad;
* only ``.item()`` values and detached images are kept across iterations.
"""
import torch
import torch.nn as nn
import torchvision.utils as vutils

real_label = 1.0
fake_label = 0.0
nz = 100


def train(netG, netD, dataloader, optimizerD, optimizerG, num_epochs, device):
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(64, nz, 1, 1, device=device)
    img_list = []
    G_losses = []
    D_losses = []
    iters = 0
    for epoch in range(num_epochs):
        for i, data in enumerate(dataloader, 0):
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            real_cpu = data[0].to(device)
            b_size = real_cpu.size(0)
            label = torch.full((b_size,), real_label, dtype=torch.float, device=device)
            output = netD(real_cpu).view(-1)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = torch.randn(b_size, nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach()).view(-1)
            errD_fake = criterion(output, label)
            errD_fake.backward()
            D_G_z1 = output.mean().item()
            errD = errD_real + errD_fake
            netG.zero_grad()
            optimizerD.step()

            # (2) Update G network: maximize log(D(G(z)))
            label.fill_(real_label)
            output = netD(fake).view(-1)
            errG = criterion(output, label)
            errG.backward()
            D_G_z2 = output.mean().item()
            optimizerG.step()

            if i % 50 == 0:
                print(f"[{epoch}/{num_epochs}][{i}/{len(dataloader)}] "
                      f"Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} "
                      f"D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}")

            G_losses.append(errG.item())
            D_losses.append(errD.item())

            if (iters % 500 == 0) or ((epoch == num_epochs - 1) and (i == len(dataloader) - 1)):
                with torch.no_grad():
                    fake = netG(fixed_noise).detach().cpu()
                img_list.append(vutils.make_grid(fake, padding=2, normalize=True))
            iters += 1
    return G_losses, D_losses, img_list
