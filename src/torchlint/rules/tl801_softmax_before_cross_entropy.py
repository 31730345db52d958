"""TL801: probabilities from a softmax fed to a cross-entropy loss, which applies log_softmax itself."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.activations import SOFTMAX, loss_inputs
from torchlint.needs import ActivationReachesLoss, Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

_DETAIL = ("input of cross_entropy already went through softmax ({}); CrossEntropyLoss applies log_softmax itself, "
           "so gradients shrink and the loss cannot fall below log(1 + (C-1)/e): pass the raw logits")


class SoftmaxBeforeCrossEntropy(Rule):
    code = "TL801"
    name = "softmax-before-cross-entropy"
    message = ("input of cross_entropy already went through softmax; CrossEntropyLoss applies log_softmax itself, "
               "so gradients shrink and the loss cannot fall below log(1 + (C-1)/e): pass the raw logits")
    torch_programs_only = True
    needs = (Text(r"CrossEntropyLoss|cross_entropy") & Text(r"[Ss]oftmax")
             & ActivationReachesLoss("cross_entropy", SOFTMAX))

    docs = """
## What it does
Finds `nn.CrossEntropyLoss` and `F.cross_entropy` called on a tensor that
went through a softmax last: `F.softmax`, `torch.softmax`, `x.softmax(dim)`
or an `nn.Softmax` layer. The softmax may be applied in the loss's own
argument, bound to a name first, or be the end of the model that produced
the tensor: the last layer of an `nn.Sequential` built in the file, or what
every `return` of the `forward` of a model class of the same file hands
back. The loss's criterion may be built anywhere in the file (module level,
`__init__`, or passed in by every caller of the training function).

## Why is this bad
`CrossEntropyLoss` computes `log_softmax` of its input itself: it expects
raw, unnormalised logits. Given probabilities `p`, it computes the
cross-entropy of `softmax(p)`, and since every `p` lies in [0, 1], that
second softmax can never be confident: with C classes the best prediction it
can express gives the true class e / (e + C - 1) (23% for 10 classes), so
the loss never falls below log(1 + (C - 1)/e) (1.46 for 10 classes) however
well the model classifies. Its gradient passes through the first softmax's
Jacobian, which vanishes as soon as the model is confident: a confidently
wrong prediction gets almost no gradient, the opposite of what training
needs. Models train slower, stall at worse accuracy, and the loss reported
is not the cross-entropy of the model's predictions. Nothing raises.

`log_softmax` before the loss is not reported: `log_softmax` of
log-probabilities returns them unchanged, so `cross_entropy(log_softmax(x))`
equals `cross_entropy(x)` (one wasted operation, no wrong gradient). Nor is
a softmax applied to the *target* (soft labels, distillation:
`F.cross_entropy(student_logits, F.softmax(teacher_logits / T, dim=1))`),
nor a model whose `forward` returns probabilities only in evaluation
(`if not self.training: x = x.softmax(1)`), nor anything the file does not
show (a model imported from another module).

## Example
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return F.softmax(self.fc(x), dim=1)

model, criterion = Net(), nn.CrossEntropyLoss()
for x, y in loader:
    loss = criterion(model(x), y)
```

## Use instead
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x)  # logits; apply softmax where probabilities are wanted

model, criterion = Net(), nn.CrossEntropyLoss()
for x, y in loader:
    loss = criterion(model(x), y)
```

"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for found in loss_inputs(file_model):
            applied = found.ends_in(SOFTMAX) if found.loss == "cross_entropy" else None
            if applied is not None:
                yield self.report(found.call.node, _DETAIL.format(applied.describe()))

    valid = (
        """\
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        logits = self.fc(x)
        if not self.training:
            return F.softmax(logits, dim=1)  # probabilities for the caller in evaluation only
        return logits


def train(loader, teacher):
    model, criterion = Net(), nn.CrossEntropyLoss()
    for x, y in loader:
        loss = criterion(model(x), y)
        soft = F.cross_entropy(model(x), F.softmax(teacher(x) / 2.0, dim=1))  # soft labels: the target
        probs = F.softmax(model(x), dim=1)
        accuracy = (probs.argmax(1) == y).float().mean()
        (loss + soft).backward()
""",
        """\
import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(784, 10), nn.LogSoftmax(dim=1))
criterion = nn.CrossEntropyLoss()


def step(x, y):
    log_probs = model(x)
    same = criterion(log_probs, y)  # log_softmax of log-probabilities changes nothing
    probs = torch.softmax(x, dim=1)
    probs = torch.log(probs + 1e-8)
    return same + F.cross_entropy(probs, y)
""",
    )
    invalid = (
        """\
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        x = self.fc(x)
        return F.softmax(x, dim=1)


def train(model, loader, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)  # expect: TL801
        loss.backward()


train(Net(), [], nn.CrossEntropyLoss())
""",
        """\
import torch
from collections import OrderedDict
from torch import nn

classifier = nn.Sequential(OrderedDict([
    ("fc", nn.Linear(128, 10)),
    ("softmax", nn.Softmax(dim=1)),
    ("drop", nn.Dropout(0.1)),
]))
loss_fn = nn.CrossEntropyLoss().cuda()


def step(features, labels, logits):
    probs = logits.softmax(-1)
    a = loss_fn(classifier(features), labels)  # expect: TL801
    b = nn.functional.cross_entropy(probs.view(-1, 10), labels)  # expect: TL801
    c = torch.nn.CrossEntropyLoss()(torch.softmax(logits, dim=1), labels)  # expect: TL801
    return a + b + c
""",
    )

