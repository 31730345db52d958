"""DCGAN loop whose discriminator step runs on the undetached fake."""
import torch
import torch.nn as nn


def train(netG, netD, dataloader, optimizerD, optimizerG, nz, device, epochs):
    criterion = nn.BCELoss()
    for epoch in range(epochs):
        for i, (data, _) in enumerate(dataloader):
            netD.zero_grad()
            real = data.to(device)
            label = torch.full((real.size(0),), 1.0, device=device)
            errD_real = criterion(netD(real).view(-1), label)
            errD_real.backward()
            noise = torch.randn(real.size(0), nz, 1, 1, device=device)
            fake = netG(noise)
            label.fill_(0.0)
            output = netD(fake).view(-1)  # expect: TL405
            errD_fake = criterion(output, label)
            errD_fake.backward()
            optimizerD.step()

            netG.zero_grad()
            label.fill_(1.0)
            errG = criterion(netD(netG(noise)).view(-1), label)
            errG.backward()
            optimizerG.step()
