"""An optimizer's parameters gathered into a variable first, then handed to it.

``itertools.chain(enc.parameters(), dec.parameters())`` and
``list(a.parameters()) + list(b.parameters())`` stored in ``params``: the
optimizer updates the encoder and the decoder all the same, so the
discriminator's backward through a reconstruction from before the
autoencoder's step runs through weights that step changed in place (TL203).
A stored ``chain``, ``filter`` or generator expression is a one-shot
iterator: the optimizer built from it reads it to the end, and a clip given
the same variable afterwards clips nothing (TL205).
"""
import itertools

import torch
import torch.nn as nn

enc = nn.Linear(4, 2)
dec = nn.Linear(2, 4)
disc = nn.Linear(4, 1)
bce = nn.BCEWithLogitsLoss()


def adversarial_autoencoder(loader):
    params = itertools.chain(enc.parameters(), dec.parameters())
    opt_ae = torch.optim.Adam(params, lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    for x in loader:
        opt_ae.zero_grad()
        opt_d.zero_grad()
        recon = dec(enc(x))
        d_out = disc(recon)
        ae_loss = ((recon - x) ** 2).mean() + bce(d_out, torch.ones(len(x), 1))
        ae_loss.backward(retain_graph=True)
        opt_ae.step()
        d_loss = bce(d_out, torch.zeros(len(x), 1))
        d_loss.backward()  # expect: TL203
        opt_d.step()


def listed(loader):
    params = list(enc.parameters()) + list(dec.parameters())
    opt_ae = torch.optim.SGD(params, lr=0.1)
    opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
    for x in loader:
        opt_ae.zero_grad()
        opt_d.zero_grad()
        d_out = disc(dec(enc(x)))
        bce(d_out, torch.ones(len(x), 1)).backward(retain_graph=True)
        opt_ae.step()
        bce(d_out, torch.zeros(len(x), 1)).backward()  # expect: TL203
        opt_d.step()


def clipped(loader):
    params = itertools.chain(enc.parameters(), dec.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    trainable = filter(lambda p: p.requires_grad, disc.parameters())
    opt_d = torch.optim.Adam(trainable, lr=1e-3)
    decoder_params = (p for p in dec.parameters() if p.requires_grad)
    opt_dec = torch.optim.SGD(decoder_params, lr=0.1)
    for x in loader:
        optimizer.zero_grad()
        opt_d.zero_grad()
        opt_dec.zero_grad()
        recon = dec(enc(x))
        (((recon - x) ** 2).mean() + disc(recon).mean()).backward()
        nn.utils.clip_grad_norm_(params, 1.0)  # expect: TL205
        nn.utils.clip_grad_norm_(trainable, 1.0)  # expect: TL205
        nn.utils.clip_grad_value_(decoder_params, 0.5)  # expect: TL205
        optimizer.step()
        opt_d.step()
        opt_dec.step()
