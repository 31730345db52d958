# A function called only from itself was taken to run under no_grad (the call
# cycle's placeholder counted as a caller): TL102 on a plain training loop.
import torch
from torch import nn


def sample_real(n, device):
    criterion = nn.BCEWithLogitsLoss()
    for step in range(steps):
        real = sample_real(batch, device)
        fake = netG(noise)
        optimizerD.zero_grad()
        d_loss = criterion(netD(fake), zeros)
        d_loss.backward()
        optimizerD.step()
