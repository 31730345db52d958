# guards: TL402
"""Library helpers that convert model outputs for plotting.

Correct (as far as a reader of this file can tell): ``predict_proba`` has
no caller in this module; the package's callers run it under
``torch.no_grad()``, where ``.numpy()`` is allowed. ``to_image`` uses
``numpy(force=True)``, which detaches by itself. ``saliency`` converts the
input's gradient, which carries no graph.
"""
import torch
import torch.nn.functional as F


def predict_proba(model, images):
    logits = model(images)
    return F.softmax(logits, dim=1).cpu().numpy()


def to_image(generator, z):
    sample = generator(z)
    return sample.numpy(force=True).transpose(0, 2, 3, 1)


def saliency(model, image, target_class):
    image = image.clone().requires_grad_(True)
    score = model(image)[0, target_class]
    score.backward()
    return image.grad.abs().max(dim=1)[0].cpu().numpy()
