"""TL611 (opt-in): a training program that saves its result but never seeds its random numbers."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.seeding import mentions_seeding, saves_after_training
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding


class UnseededSavedTraining(Rule):
    code = "TL611"
    name = "unseeded-saved-training"
    message = ("this program trains and saves its result without seeding its random numbers, so two runs "
               "save different weights and metrics; seed torch, random and numpy at its start "
               "(torch.manual_seed(0), random.seed(0), np.random.seed(0))")
    torch_programs_only = True
    default = False
    needs = Text(r"save|dump") & Text(r"backward|step\(")
    docs = """
## What it does
Finds a program (a script, or a notebook) that trains a model (calls
`backward()` or an optimizer's `step()`) and saves what it produced
(`torch.save`, `save_pretrained`, a `save_checkpoint`/`save_model` call,
`np.save`/`np.savetxt`, `json.dump`) once training has begun, and in which
nothing seeds the random number generators. It reports the first such save
(a cache written before training, such as word vectors, is not a result). Opt-in: enable with
`extend-select = ["TL611"]`.

The rule is kept narrow on purpose, because many programs leave their runs
unseeded by choice (to see run-to-run variation, or because only the
distribution of results matters). It stays silent when:

- any name in the file mentions a seed or determinism: `torch.manual_seed`,
  `torch.cuda.manual_seed_all`, `random.seed`, `np.random.seed`,
  Lightning's `seed_everything`, `transformers.set_seed`, a helper of your
  own called `set_seed`/`init_seeds`, an `args.seed` handed to a library,
  `torch.use_deterministic_algorithms`; or the program calls a function of
  another module of the project that calls one of those;
- a comment mentions a seed (`# torch.manual_seed(1)`, commented out, is a
  choice), or the file uses a cryptographically secure generator
  (`secure_mode`, `secure_rng`, `torchcsprng`: differential privacy's noise
  must not be reproducible);
- the file is a module of definitions that nothing at its own level runs
  (its caller, the program, decides about seeds);
- the program does not train, or saves nothing (printing results, plotting
  and saving sample images are not counted);
- the file is a unit test.

## Why is this bad
Weights are initialised from torch's random generator, `DataLoader(shuffle=True)`
draws the order of batches from it, dropout and augmentations draw from
torch, `random` and NumPy. A Python process starts each of them from fresh
entropy, so two runs of an unseeded program train different models and save
different checkpoints and metrics: a change cannot be told apart from noise,
and a result cannot be reproduced. Seeding does not make every CUDA kernel
deterministic (see `torch.use_deterministic_algorithms`), but without it no
run can be repeated at all.

## Example
```python
import torch

model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(train_set, batch_size=64, shuffle=True):
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
torch.save(model.state_dict(), "model.pt")
```

## Use instead
```python
import random

import numpy as np
import torch

random.seed(0)
np.random.seed(0)
torch.manual_seed(0)  # seeds the CPU and every CUDA device

model = Net()
...
torch.save(model.state_dict(), "model.pt")
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        saves = saves_after_training(file_model)
        if not saves or mentions_seeding(file_model):
            return
        yield self.report(saves[0].node)

    valid = (
        """\
import torch
from torch import nn


def main(seed=0):
    torch.manual_seed(seed)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
""",
        """\
import torch


def train(model, loader, optimizer, loss_fn, path):
    # A library function: whoever runs it decides about seeds.
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
    torch.save(model.state_dict(), path)
""",
        """\
import lightning as L
import torch

L.seed_everything(42)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())
for _ in range(100):
    optimizer.zero_grad()
    model(torch.randn(16, 4)).square().mean().backward()
    optimizer.step()
torch.save(model, "model.pt")
""",
    )
    invalid = (
        """\
import torch
from torch import nn


def main():
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        optimizer.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        optimizer.step()
    torch.save(model.state_dict(), "model.pt")  # expect: TL611


if __name__ == "__main__":
    main()
""",
        """\
import json

import torch

net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.Adam(net.parameters())
for step in range(200):
    x = torch.rand(32, 2)
    loss = (net(x) - x.sum(1, keepdim=True)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
with open("metrics.json", "w") as f:
    json.dump({"loss": loss.item()}, f)  # expect: TL611
""",
    )
