# guards: TL201
"""Guidance by gradient descent on a fresh latent each step: a new leaf and a new
optimizer every iteration, so there is nothing for gradients to accumulate into."""
import torch


def guide(unet, latents, timesteps, amount):
    for t in timesteps:
        x_in = latents.detach().clone()
        x_in.requires_grad = True
        opt = torch.optim.SGD([x_in], lr=amount)
        with torch.enable_grad():
            noise_pred = unet(x_in, t).sample
            loss = (noise_pred ** 2).mean()
            loss.backward()
            opt.step()
        latents = x_in.detach()
    return latents
