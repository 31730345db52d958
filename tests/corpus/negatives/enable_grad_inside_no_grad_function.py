# guards: TL101 TL102
"""ODIN-style out-of-distribution scoring: enable_grad inside a no_grad function.

Correct: ``odin_scores`` is decorated with ``@torch.no_grad()``, and the one
place that needs autograd (the gradient of the loss w.r.t. the *input*) is
wrapped in an explicit ``with torch.enable_grad():`` block whose result feeds
``loss.backward()``.  That forward pass records a graph on purpose; the
second forward pass on the perturbed input runs back under no_grad.  No
parameter is updated and the in-place ``x.grad.zero_()`` targets a gradient
buffer, not a leaf that requires grad.
"""
import torch
import torch.nn.functional as F


@torch.no_grad()
def odin_scores(model, loader, device, temperature=1000.0, epsilon=0.0014):
    model.eval()
    scores = []
    for images, _ in loader:
        images = images.to(device)
        with torch.enable_grad():
            x = images.clone().requires_grad_(True)
            logits = model(x) / temperature
            pseudo_labels = logits.argmax(dim=1)
            loss = F.cross_entropy(logits, pseudo_labels)
            loss.backward()
        x_perturbed = images - epsilon * x.grad.sign()
        x.grad.zero_()
        logits = model(x_perturbed) / temperature
        scores.append(F.softmax(logits, dim=1).max(dim=1).values.cpu())
    return torch.cat(scores)
