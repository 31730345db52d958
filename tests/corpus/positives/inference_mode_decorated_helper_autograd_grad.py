"""Gradient-based attack helpers copied next to inference code inherit its no-grad mode."""
import torch
import torch.nn.functional as F


@torch.inference_mode()
def fgsm(model, images, labels, eps=8 / 255):
    images = images.clone().requires_grad_(True)
    loss = F.cross_entropy(model(images), labels)
    (grad,) = torch.autograd.grad(loss, images)  # expect: TL102
    return (images + eps * grad.sign()).clamp(0, 1)


def finetune_step(net, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.mse_loss(net(x), y)
    loss.backward()  # expect: TL102
    optimizer.step()


def warm_start(net, optimizer, batches):
    with torch.no_grad():
        for x, y in batches:
            finetune_step(net, optimizer, x, y)
