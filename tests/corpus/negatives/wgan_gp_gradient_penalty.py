# guards: TL302 TL403
"""WGAN-GP critic update with a gradient penalty.

Correct: the penalty needs second-order gradients, so
``torch.autograd.grad(..., create_graph=True, retain_graph=True)`` is
required; ``d_loss.backward()`` then runs once per iteration through that
graph.  ``interpolates`` is built from detached tensors and gets
``requires_grad_(True)`` (it is not a leaf being modified in place after
requiring grad).  ``optimizer_G.zero_grad()`` sits between the critic's
``d_loss.backward()`` and ``optimizer_G.step()``, but ``g_loss.backward()``
runs after it and before the generator step, and the critic's backward only
reached the critic (``generator(z).detach()``), so nothing the generator's
step needs is discarded (as in the PyTorch-GAN reference implementation).
"""
import torch
import torch.autograd as autograd


def compute_gradient_penalty(D, real_samples, fake_samples, device):
    alpha = torch.rand(real_samples.size(0), 1, 1, 1, device=device)
    interpolates = (alpha * real_samples + (1 - alpha) * fake_samples).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = torch.ones(d_interpolates.shape, device=device)
    gradients = autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=fake,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


def train(generator, discriminator, dataloader, optimizer_G, optimizer_D, n_epochs, latent_dim,
          device, n_critic=5, lambda_gp=10):
    batches_done = 0
    for epoch in range(n_epochs):
        for i, (imgs, _) in enumerate(dataloader):
            real_imgs = imgs.to(device)

            optimizer_D.zero_grad()
            z = torch.randn(imgs.shape[0], latent_dim, device=device)
            fake_imgs = generator(z).detach()
            real_validity = discriminator(real_imgs)
            fake_validity = discriminator(fake_imgs)
            gradient_penalty = compute_gradient_penalty(discriminator, real_imgs.data, fake_imgs.data, device)
            d_loss = -torch.mean(real_validity) + torch.mean(fake_validity) + lambda_gp * gradient_penalty
            d_loss.backward()
            optimizer_D.step()

            optimizer_G.zero_grad()
            if i % n_critic == 0:
                fake_imgs = generator(z)
                fake_validity = discriminator(fake_imgs)
                g_loss = -torch.mean(fake_validity)
                g_loss.backward()
                optimizer_G.step()
                print(f"[Epoch {epoch}/{n_epochs}] [Batch {i}/{len(dataloader)}] "
                      f"[D loss: {d_loss.item():.4f}] [G loss: {g_loss.item():.4f}]")
                batches_done += n_critic
