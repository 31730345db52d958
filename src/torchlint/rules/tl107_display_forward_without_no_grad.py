"""TL107 (opt-in): a forward made to look at the model (a plot, saved samples, a short demo) records a graph."""
from __future__ import annotations

from typing import ClassVar

from torchlint.rules.tl101_eval_without_no_grad import EvalWithoutNoGrad


class DisplayForwardWithoutNoGrad(EvalWithoutNoGrad):
    """TL101's analysis, reporting the forwards it leaves out of the default output: those
    whose output only reaches a plot, a saved image or a shape read, and a notebook's
    few-step demonstration loops (``model.display``)."""

    code = "TL107"
    name = "display-forward-without-no-grad"
    message = (
        "model run for a plot, saved samples or a short demo without torch.no_grad(): it records a "
        "graph nobody uses; wrap it in `with torch.no_grad():`"
    )
    default = False
    reports_looks: ClassVar[bool] = True
    docs = """
## What it does
Finds the forward passes that TL101 would report but that only serve a look at
the model, with neither `torch.no_grad()` nor `torch.inference_mode()` in
effect:

- the output reaches nothing but a plot, a saved image or a shape read
  (`save_image(G(z).data, ...)` in a `sample_images()` called every N batches,
  `ax.scatter(*net_G(Z).detach().numpy().T)` once per epoch,
  `plt.title(names[model(img).argmax()])`, `print(out.shape)`), following the
  output through tensor methods, torch functions, captions and up to three
  names;
- a loop at the top of a script or notebook that runs at most ten times
  (`for s in range(1, 6)`, `for i in range(num_to_plot)` after
  `num_to_plot = 5`).

A forward inside a loop over a data loader, or over a whole evaluation set
(`model(x_test)`), is evaluation and stays with TL101 whatever is drawn.

## Why is this bad
Each such forward records an autograd graph and keeps the activations a
backward pass would need; nothing ever backpropagates through them. The waste
is one small graph at a time, freed with the output, and it does not grow with
a dataset: that is why TL101 leaves these out of its default findings (careful
reviewers call them a nit), and why this rule is opt-in. On a large generator
sampling a big grid every few hundred steps the memory peak is real; select
TL107 to see them.

## Example
```python
def sample_images(batches_done):
    generator.eval()
    fake = generator(fixed_noise)
    save_image(fake.data, f"images/{batches_done}.png", nrow=5, normalize=True)
    generator.train()
```

## Use instead
```python
@torch.no_grad()
def sample_images(batches_done):
    generator.eval()
    fake = generator(fixed_noise)
    save_image(fake.data, f"images/{batches_done}.png", nrow=5, normalize=True)
    generator.train()
```

## Fix safety
As TL101's: the fix wraps the loop that holds the forward (outside a loop, the
statement) in `with torch.no_grad():` and is unsafe for the same reasons.
"""

    valid = (
        """\
import torch
from torchvision.utils import save_image


@torch.no_grad()
def sample_images(generator, noise, step):
    generator.eval()
    save_image(generator(noise).data, f"images/{step}.png")
    generator.train()
""",
        """\
import torch


def evaluate(model, val_loader):
    model.eval()
    for x, y in val_loader:
        out = model(x)
        print(out.shape, (out.argmax(1) == y).float().mean().item())
""",
        """\
import torch
import matplotlib.pyplot as plt

model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
X = torch.randn(100, 2)
for step in range(5):
    loss = model(X).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    )
    invalid = (
        """\
import torch
from torchvision.utils import save_image


def sample_images(generator, noise, step):
    generator.eval()
    fake = generator(noise)  # expect: TL107
    save_image(fake.data, f"images/{step}.png", nrow=5)
    generator.train()


def train(generator, optimizer, loader, noise):
    for step, z in enumerate(loader):
        loss = generator(z).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 500 == 0:
            sample_images(generator, noise, step)
""",
        """\
import torch
import matplotlib.pyplot as plt

model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
X = torch.randn(100, 2)
model.eval()
for s in range(1, 6):
    Y = model(s * X).data  # expect: TL107
    plt.scatter(Y[:, 0], Y[:, 1])
""",
    )
