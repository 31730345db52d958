"""TL802: probabilities from a sigmoid fed to BCEWithLogitsLoss, which applies sigmoid itself."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.activations import SIGMOID, loss_inputs
from torchlint.needs import ActivationReachesLoss, Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

_DETAIL = ("input of binary_cross_entropy_with_logits already went through sigmoid ({}); the loss applies sigmoid "
           "itself, so predictions stay between 0.5 and 0.73 and gradients vanish: pass the raw logits")


class SigmoidBeforeBCEWithLogits(Rule):
    code = "TL802"
    name = "sigmoid-before-bce-with-logits"
    message = ("input of binary_cross_entropy_with_logits already went through sigmoid; the loss applies sigmoid "
               "itself, so predictions stay between 0.5 and 0.73 and gradients vanish: pass the raw logits")
    torch_programs_only = True
    needs = (Text(r"BCEWithLogitsLoss|binary_cross_entropy_with_logits") & Text(r"[Ss]igmoid|expit")
             & ActivationReachesLoss("bce_logits", SIGMOID))

    docs = """
## What it does
Finds `nn.BCEWithLogitsLoss` and `F.binary_cross_entropy_with_logits`
called on a tensor that went through a sigmoid last: `torch.sigmoid`,
`F.sigmoid`, `torch.special.expit`, `x.sigmoid()` or an `nn.Sigmoid` layer,
applied in the loss's own argument, bound to a name first, or at the end of
the model that produced the tensor (the last layer of an `nn.Sequential`
built in the file, or every `return` of the `forward` of a model class of
the same file).

## Why is this bad
`BCEWithLogitsLoss` is `sigmoid` followed by binary cross-entropy, fused for
numerical stability: it expects raw logits. Given probabilities `p` in
[0, 1], it computes the cross-entropy of `sigmoid(p)`, which can only lie
between 0.5 and 0.73. The model can never say "no" (every prediction is at
least 0.5), the loss for a positive never falls below
-log(sigmoid(1)) = 0.31 nor the one for a negative below
-log(1 - sigmoid(0)) = 0.69, and the gradient passes through the first
sigmoid's derivative, which vanishes as soon as the model is confident:
confidently wrong predictions get almost no gradient. Training stalls and
nothing raises.

Not reported: a sigmoid applied for the metrics next to the loss
(`preds = torch.sigmoid(logits) > 0.5`), a model whose `forward` returns
probabilities only in evaluation, and `nn.BCELoss` on a sigmoid (that pair
is right; see TL804 for the other way round).

## Example
```python
class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)

D, criterion = Discriminator(), nn.BCEWithLogitsLoss()
loss = criterion(D(images), torch.ones(len(images), 1))
```

## Use instead
```python
class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))

    def forward(self, x):
        return self.net(x)  # logits

D, criterion = Discriminator(), nn.BCEWithLogitsLoss()
loss = criterion(D(images), torch.ones(len(images), 1))
```

"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for found in loss_inputs(file_model):
            applied = found.ends_in(SIGMOID) if found.loss == "bce_logits" else None
            if applied is not None:
                yield self.report(found.call.node, _DETAIL.format(applied.describe()))

    valid = (
        """\
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(20, 1)

    def forward(self, x):
        return self.fc(x)


def train(loader):
    model, criterion = Classifier(), nn.BCEWithLogitsLoss()
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        preds = torch.sigmoid(logits) > 0.5
        loss.backward()
""",
        """\
import torch
import torch.nn as nn
import torch.nn.functional as F

disc = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1), nn.Sigmoid())
bce = nn.BCELoss()


def step(x, y, gate):
    right = bce(disc(x), y)  # probabilities into BCELoss: the right pair
    probs = torch.sigmoid(gate)
    probs = gate * 2.0
    return right + F.binary_cross_entropy_with_logits(probs, y)
""",
    )
    invalid = (
        """\
import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


D = Discriminator()
criterion = nn.BCEWithLogitsLoss()
images = torch.randn(8, 784)
loss = criterion(D(images), torch.ones(8, 1))  # expect: TL802
""",
        """\
import torch
import torch.nn.functional as F


def step(model, x, y):
    scores = model(x).sigmoid()
    a = F.binary_cross_entropy_with_logits(scores.squeeze(1), y)  # expect: TL802
    b = torch.nn.BCEWithLogitsLoss()(torch.sigmoid(model(x)), y)  # expect: TL802
    return a + b
""",
    )
