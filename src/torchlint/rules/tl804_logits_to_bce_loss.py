"""TL804: raw logits from a linear layer fed to BCELoss, which wants probabilities in [0, 1]."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.activations import LOGITS, loss_inputs
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

_DETAIL = ("input of binary_cross_entropy is raw logits ({}); BCELoss expects probabilities in [0, 1] and raises on "
           "any other value: use BCEWithLogitsLoss on the logits, or apply sigmoid first")


class LogitsToBCELoss(Rule):
    code = "TL804"
    name = "logits-to-bce-loss"
    message = ("input of binary_cross_entropy is raw logits; BCELoss expects probabilities in [0, 1] and raises on "
               "any other value: use BCEWithLogitsLoss on the logits, or apply sigmoid first")
    torch_programs_only = True
    needs = Text(r"BCELoss|binary_cross_entropy\b") & Text(r"Linear|Conv|linear")
    docs = """
## What it does
Finds `nn.BCELoss` and `F.binary_cross_entropy` called on raw logits: a
tensor that comes straight out of a linear or convolution layer
(`nn.Linear`, `nn.Conv2d`, `F.linear`, ...), in the loss's own argument,
bound to a name first, or as the end of the model that produced it (the
last layer of an `nn.Sequential` built in the file, dropout aside, or every
`return` of the `forward` of a model class of the same file), through
reshapes (`.squeeze(1)`, `.view(-1)`).

## Why is this bad
`BCELoss` takes probabilities: it computes `-(y log p + (1 - y) log(1 - p))`
and checks that every `p` lies in [0, 1]. A linear layer's output is
unbounded, so the first batch with a value outside that range raises
`RuntimeError: all elements of input should be between 0 and 1` on the CPU
(a device-side assert on CUDA, which also takes down the CUDA context). The
usual cause is a sigmoid that was removed from the model, or a loss that was
swapped from `BCEWithLogitsLoss`. `BCEWithLogitsLoss` on the logits is the
fix: it fuses the sigmoid into the loss and is numerically stable where
`BCELoss(sigmoid(x))` saturates.

Only logits the file shows are reported: a model whose last layer is a
sigmoid, a tanh or anything else, a value clamped into [0, 1], or a model
imported from another module is not.

## Example
```python
model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 1))
criterion = nn.BCELoss()
loss = criterion(model(x).squeeze(1), y)
```

## Use instead
```python
model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 1))
criterion = nn.BCEWithLogitsLoss()
loss = criterion(model(x).squeeze(1), y)
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for found in loss_inputs(file_model):
            raw = found.ends_in(LOGITS) if found.loss == "bce" else None
            if raw is not None:
                yield self.report(found.call.node, _DETAIL.format(raw.describe()))

    valid = (
        """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


def train(loader):
    D, criterion = Discriminator(), nn.BCELoss()
    for x, y in loader:
        loss = criterion(D(x), y)
        recon = F.binary_cross_entropy(torch.sigmoid(D.fc(x)), y)
        (loss + recon).backward()
""",
        """\
import torch.nn as nn
import torch.nn.functional as F

decoder = nn.Sequential(nn.Linear(20, 400), nn.ReLU(), nn.Linear(400, 784), nn.Sigmoid())
head = nn.Linear(784, 1)


def vae_loss(z, x):
    logits = head(x)
    return F.binary_cross_entropy(decoder(z), x, reduction="sum") + F.binary_cross_entropy_with_logits(logits, x)
""",
    )
    invalid = (
        """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(20, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        x = torch.relu(self.hidden(x))
        return self.out(x)


def train(model, loader):
    criterion = nn.BCELoss()
    for x, y in loader:
        loss = criterion(model(x).squeeze(1), y)  # expect: TL804
        loss.backward()


train(Net(), [])
""",
        """\
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 1), nn.Dropout(0.1))


def step(x, y):
    logits = model(x)
    return F.binary_cross_entropy(logits.view(-1), y)  # expect: TL804
""",
    )
