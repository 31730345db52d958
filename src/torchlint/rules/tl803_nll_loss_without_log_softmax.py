"""TL803: NLLLoss fed probabilities from a softmax, or raw logits, instead of log-probabilities."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.activations import LOGITS, SOFTMAX, loss_inputs
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

_SOFTMAX = ("input of nll_loss went through softmax, not log_softmax ({}); NLLLoss expects log-probabilities and "
            "would minimise -p, whose gradient vanishes on confident mistakes: use log_softmax")
_LOGITS = ("input of nll_loss is raw logits ({}); NLLLoss expects log-probabilities and -logit has no lower bound: "
           "apply log_softmax first, or use CrossEntropyLoss")


class NllLossWithoutLogSoftmax(Rule):
    code = "TL803"
    name = "nll-loss-without-log-softmax"
    message = ("input of nll_loss went through softmax, not log_softmax; NLLLoss expects log-probabilities and "
               "would minimise -p, whose gradient vanishes on confident mistakes: use log_softmax")
    torch_programs_only = True
    needs = Text(r"NLLLoss|nll_loss") & Text(r"[Ss]oftmax|Linear|Conv|linear")
    docs = """
## What it does
Finds `nn.NLLLoss` and `F.nll_loss` called on a tensor that is not
log-probabilities: one that went through a softmax last (`F.softmax`,
`torch.softmax`, `x.softmax(dim)`, an `nn.Softmax` layer), or raw logits
straight out of a linear or convolution layer (`nn.Linear`, `nn.Conv2d`,
`F.linear`). The activation or layer may be in the loss's own argument,
bound to a name first, or at the end of the model that produced the tensor
(the last layer of an `nn.Sequential` built in the file, or every `return`
of the `forward` of a model class of the same file).

## Why is this bad
`NLLLoss` only picks `-input[target]` and averages: it is the cross-entropy
only when the input is `log_softmax` of the logits. Given probabilities `p`
it minimises `-p[target]`, a bounded, nearly linear objective whose gradient
`p(1 - p)` vanishes exactly where training most needs it, on a confidently
wrong prediction (`p[target]` near 0); the loss reported is a negative
number, not a cross-entropy. Given raw logits it minimises `-logit[target]`,
which has no lower bound: the logits grow without limit and the loss heads
to minus infinity. Nothing raises in either case.

Not reported: `log_softmax` (the right input), `torch.log(probs)` or
`(probs + eps).log()` (log-probabilities, if less stable), a softmax used
for metrics beside the loss, and a model whose `forward` returns
probabilities only in evaluation.

## Example
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)

model = Net()
for x, y in loader:
    loss = F.nll_loss(model(x), y)
```

## Use instead
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)

model = Net()
for x, y in loader:
    loss = F.nll_loss(model(x), y)
```

"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for found in loss_inputs(file_model):
            wrong = found.ends_in(SOFTMAX, LOGITS) if found.loss == "nll" else None
            if wrong is None:
                continue
            if wrong.kind == SOFTMAX:
                yield self.report(found.call.node, _SOFTMAX.format(wrong.describe()))
            else:
                yield self.report(found.call.node, _LOGITS.format(wrong.describe()))

    valid = (
        """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(x), dim=1)


def train(loader):
    model = Net()
    for x, y in loader:
        output = model(x)
        loss = F.nll_loss(output, y)
        probs = output.exp()
        loss.backward()
""",
        """\
import torch
import torch.nn as nn

head = nn.Linear(64, 5)
criterion = nn.NLLLoss()


def step(features, targets):
    probs = torch.softmax(head(features), dim=-1)
    confidence = probs.max(dim=-1).values
    return criterion(torch.log(probs + 1e-8), targets), confidence
""",
    )
    invalid = (
        """\
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.fc = nn.Linear(8 * 26 * 26, 10)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = self.fc(x.flatten(1))
        return F.softmax(x, dim=1)


def train(model, loader):
    for x, y in loader:
        loss = F.nll_loss(model(x), y)  # expect: TL803
        loss.backward()


train(Net(), [])
""",
        """\
import torch
from torch import nn

decoder = nn.Sequential(nn.Linear(256, 1000), nn.Dropout(0.2))
criterion = nn.NLLLoss()


def step(hidden, target):
    a = criterion(decoder(hidden), target)  # expect: TL803
    b = criterion(torch.softmax(hidden, dim=1), target)  # expect: TL803
    return a + b
""",
    )
