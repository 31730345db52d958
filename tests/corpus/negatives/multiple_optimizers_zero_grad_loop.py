# guards: TL201
"""Autoencoder with one optimizer per sub-network, all zeroed in a small loop.

Correct: ``for opt in optimizers: opt.zero_grad()`` clears the gradients of
both optimizers at the top of the iteration, before backward; both are then
stepped after backward.
"""
import torch.nn.functional as F


def train(encoder, decoder, loader, enc_optimizer, dec_optimizer, epochs, device):
    optimizers = (enc_optimizer, dec_optimizer)
    for epoch in range(epochs):
        for x, _ in loader:
            x = x.to(device)
            for opt in optimizers:
                opt.zero_grad()
            recon = decoder(encoder(x))
            loss = F.mse_loss(recon, x)
            loss.backward()
            enc_optimizer.step()
            dec_optimizer.step()
    return encoder, decoder
