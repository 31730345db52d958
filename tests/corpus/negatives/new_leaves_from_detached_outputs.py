# guards: TL403
"""New leaves on purpose: truncated BPTT state and gradients w.r.t. features.

Correct: ``hidden = hidden.detach(); hidden.requires_grad_()`` starts a new
leaf for truncated backpropagation (the code reads ``hidden.grad`` to pass
it back), and ``feats = backbone(x).detach().requires_grad_()`` makes
features a leaf whose gradient a Grad-CAM style method reads. Leaves made
with ``torch.zeros`` / ``torch.randn`` (a learned prompt, a noise image)
get ``requires_grad = True`` before use.
"""
import torch


def tbptt_step(rnn, head, chunk, target, hidden, optimizer):
    hidden = hidden.detach()
    hidden.requires_grad_()
    out, new_hidden = rnn(chunk, hidden)
    loss = torch.nn.functional.mse_loss(head(out), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return new_hidden, hidden.grad


def feature_gradients(backbone, classifier, x, cls):
    feats = backbone(x).detach().requires_grad_()
    score = classifier(feats)[:, cls].sum()
    score.backward()
    weights = feats.grad.mean(dim=(2, 3), keepdim=True)
    return (weights * feats).sum(1).relu()


def optimise_image(model, target, steps=100, shape=(1, 3, 224, 224)):
    image = torch.randn(shape)
    image.requires_grad = True
    prompt = torch.zeros(1, 16, 512)
    prompt.requires_grad_(True)
    optimizer = torch.optim.Adam([image, prompt], lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = (model(image, prompt) - target).pow(2).mean()
        loss.backward()
        optimizer.step()
    return image.detach()
