# guards: TL203 TL205
"""Parameter sets gathered into variables and used correctly.

The autoencoder's optimizer holds ``chain(enc.parameters(), dec.parameters())``,
and the discriminator's loss is computed from a reconstruction made after the
autoencoder's step (detached for the discriminator). A chain materialised with
``list(...)`` can be given to the optimizer and to the clip; a chain built again
for each clip is a fresh iterator; ``filter`` here is this file's own function,
which returns a list.
"""
import itertools

import torch
import torch.nn as nn

enc = nn.Linear(4, 2)
dec = nn.Linear(2, 4)
disc = nn.Linear(4, 1)
bce = nn.BCEWithLogitsLoss()


def filter(keep, parameters):
    return [p for p in parameters if keep(p)]


def adversarial_autoencoder(loader):
    params = itertools.chain(enc.parameters(), dec.parameters())
    opt_ae = torch.optim.Adam(params, lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    for x in loader:
        opt_ae.zero_grad()
        recon = dec(enc(x))
        ae_loss = ((recon - x) ** 2).mean() + bce(disc(recon), torch.ones(len(x), 1))
        ae_loss.backward()
        opt_ae.step()
        opt_d.zero_grad()
        d_loss = bce(disc(dec(enc(x)).detach()), torch.zeros(len(x), 1))
        d_loss.backward()
        opt_d.step()


def clipped(loader):
    params = list(itertools.chain(enc.parameters(), dec.parameters()))
    optimizer = torch.optim.Adam(params, lr=1e-3)
    trainable = filter(lambda p: p.requires_grad, disc.parameters())
    opt_d = torch.optim.Adam(trainable, lr=1e-3)
    for x in loader:
        optimizer.zero_grad()
        opt_d.zero_grad()
        recon = dec(enc(x))
        (((recon - x) ** 2).mean() + disc(recon).mean()).backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        nn.utils.clip_grad_norm_(trainable, 1.0)
        nn.utils.clip_grad_norm_(itertools.chain(enc.parameters(), dec.parameters()), 1.0)
        optimizer.step()
        opt_d.step()
