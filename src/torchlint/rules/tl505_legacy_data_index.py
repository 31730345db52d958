"""TL505: ``loss.data[0]`` reads a number the pre-0.4 way; on a 0-dim tensor it raises."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.shapes import legacy_scalar_indexes, zero_dim
from torchlint.needs import Indexed
from torchlint.rule import Fix, Rule
from torchlint.text_checks import PASSED_THROUGH, indexes_data_with_zero

if TYPE_CHECKING:
    from torchlint.rule import Finding


class LegacyDataIndex(Rule):
    code = "TL505"
    name = "legacy-data-index"
    message = (
        "`.data[0]` on a 0-dim tensor (a loss or a full reduction) raises IndexError since PyTorch 0.5; "
        "read the number with `.item()`"
    )
    fix_safety = "safe"
    # ``X.data[0]``, ``X.data.cpu().numpy()[0]``: the shapes ``scalar_index`` looks through.
    needs = Indexed("data", 0, through=frozenset(PASSED_THROUGH))
    text_check = indexes_data_with_zero
    torch_version = """
PyTorch 0.4 made losses and full reductions 0-dim tensors (indexing one
warned) and added `.item()`; from 0.5 on the index raises. The rule is
silent for a project whose oldest supported torch is older than 0.4, where
`.data[0]` is still right and `.item()` does not exist yet.
"""
    # The oldest torch with 0-dim losses and ``Tensor.item()``.
    _SINCE = (0, 4)

    docs = """
## What it does
Finds `X.data[0]` (also `X.data.cpu()[0]` and `X.data.numpy()[0]`) where
`X` is surely a 0-dim tensor: the result of a loss (`criterion(out, y)`,
`F.nll_loss(...)`, a loss function of the file or of another module of
the project that returns one), of a reduction over all elements (`.sum()`,
`.mean()`, `.max()`, `.norm()` with no dim, `torch.sum(x)`), arithmetic on
those (`loss_a + 0.1 * loss_b`), or a name every binding of which is one,
or a number it adds them to (`loss = 0` then `loss += criterion(out[t], y[t])`
in a sequence model), or every binding of which that reaches the read is one
(`loss = (q - target).pow(2) * weights` then `loss = loss.mean()`).

## Why is this bad
Before PyTorch 0.4 a loss was a `Variable` holding a one-element tensor,
and `loss.data[0]` was how tutorials read its value. Since 0.4 losses and
full reductions are 0-dim tensors: 0.4 warned, and from 0.5 on indexing one
raises `IndexError: invalid index of a 0-dim tensor`. The line that logs the
loss or counts correct predictions stops the training or evaluation run.
The `.numpy()[0]` spelling fails the same way (a 0-dim array has no index 0).

Not reported where the tensor may have a dimension, so that `[0]` reads a
row or an element: a batch, a model output (`output.data[0]`), a reduction
over a dim (`x.sum(1)`, `.max(1)[1]`), a parameter (`weight.data[0]`), a
loss built with `reduction='none'` or `reduce=False`, a name bound to
something else in some branch, or a name on which only `backward()` is
called (a one-element tensor of shape `(1,)` backpropagates as well, and
indexing it is correct). Assignments such as `w.data[0] = 1.0` are not
reads and are left alone.

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running_loss += loss.data[0]
correct += (output.argmax(1) == y).sum().data[0]
```

## Use instead
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    running_loss += loss.item()
correct += (output.argmax(1) == y).sum().item()
```

## Fix safety
The fix replaces the whole index expression by `X.item()`, which returns
the number `[0]` returned before PyTorch 0.4 (a Python number; a `.cpu()`
or `.numpy()` on the way is no longer needed). It is safe: the code it
replaces can only raise.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code or file_model.target_torch_version < self._SINCE:
            return
        shapes = zero_dim(file_model)
        for scope, node, tensor, order in legacy_scalar_indexes(file_model):
            if not shapes.holds(tensor, scope, order):
                continue
            item = cst.Call(func=cst.Attribute(value=tensor, attr=cst.Name("item")))
            yield self.report(node, fix=Fix("read the number with `.item()`", ((node, item),)))

    valid = (
        """\
import torch
import torch.nn as nn

criterion = nn.CrossEntropyLoss(reduction="none")


def first_sample_loss(model, x, y):
    per_sample = criterion(model(x), y)
    output = model(x)
    top = output.max(1)[1].data[0]
    return per_sample.data[0], output.data[0], top, x.sum(1).data[0]
""",
        """\
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        print(loss.data[0], model.fc.weight.data[0])
        if len(y) > 1:
            loss = ((model(x) - y) ** 2).mean(0)
        print(loss.data[0])
""",
        """\
import numpy as np
import torch


def summary(scores, net):
    net.fc.weight.data[0] = 1.0
    best = np.asarray(scores).max()
    return float(best), scores.sum(dim=0).data[0]
""",
    )
    invalid = (
        """\
import torch
import torch.nn as nn
from torch.autograd import Variable

model = nn.Linear(4, 3)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x, y = Variable(torch.randn(8, 4)), Variable(torch.randint(0, 3, (8,)))
    output = model(x)
    loss = criterion(output, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    pred = output.max(1)[1]
    accuracy = (pred == y).sum().data[0] / 8.0  # expect: TL505
    print("step %d loss %.4f" % (step, loss.data[0]))  # expect: TL505
""",
        """\
import torch
import torch.nn.functional as F


def test(model, loader):
    test_loss, norms = 0, []
    for data, target in loader:
        output = model(data)
        test_loss += F.nll_loss(output, target, size_average=False).data[0]  # expect: TL505
        norms.append(float(torch.norm(output, 2).data.cpu().numpy()[0]))  # expect: TL505
    return test_loss, norms
""",
    )
