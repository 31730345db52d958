"""TL207: gradients accumulated over k micro-batches and stepped without dividing the loss by k."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from torchlint.edits import source_of
from torchlint.model import FileModel
from torchlint.model.accumulation import Accumulation, accumulations, backpropagated, scaled_on_the_way, stepped_class
from torchlint.rule import Fix, Rule
from torchlint.needs import BACKWARD, STEP, Text

if TYPE_CHECKING:
    from torchlint.rule import Finding

# Optimizers whose update is proportional to the gradient: a k-fold gradient is a k-fold step.
# Adam and its kin divide by the gradient's running RMS, so a constant factor barely changes theirs.
_PROPORTIONAL = frozenset(("SGD", "ASGD"))
_DETAIL = ("backward() runs every micro-batch and the optimizer steps once every {k} of them without dividing the loss "
           "by {k}: each step applies the sum of {k} gradients, {k} times their mean; backpropagate loss / {k}")


class UnscaledGradientAccumulation(Rule):
    code = "TL207"
    name = "unscaled-gradient-accumulation"
    message = ("backward() runs every micro-batch and the optimizer steps once every k of them without dividing the loss "
               "by k: each step applies the sum of k gradients, k times their mean; backpropagate loss / k")
    default = False  # opt-in until real accumulation code measures it (docs: "Opt-in for now")
    fix_safety = "unsafe"
    torch_programs_only = True
    needs = Text("SGD") & BACKWARD & STEP
    docs = """
## What it does
Finds gradient accumulation that sums instead of averaging: a training loop
that calls `backward()` on every micro-batch and `optimizer.step()` only
every k of them, in either shape

- a step guarded by a counter, `if (i + 1) % accum_steps == 0:` (or `not
  step % k`, or `count == k` for a counter the loop increments), with the
  backward outside the guard and the gradients cleared only inside it;
- an inner loop of micro-batches, `for _ in range(k): ... loss.backward()`,
  followed by one step, with no step and no clearing inside it;

when the loss reaches `backward()` undivided and the optimizer (built in the
file) is `SGD` or `ASGD`. Each micro-batch's loss must come from a forward
pass run in that micro-batch, so a sum of several losses through one graph,
or of an episode's time steps, is not taken for accumulation.

## Why is this bad
`backward()` adds into `.grad`. After k micro-batches the gradient is the
sum of k per-micro-batch gradients: k times the gradient of the mean loss
over the k micro-batches, which is what training on one batch k times as
large would compute and what the learning rate was chosen for. With SGD the
step is k times larger than intended; with 8 or 16 accumulation steps that
is enough to make training diverge, and changing `accum_steps` silently
changes the effective learning rate. Gradient clipping by norm bites k times
harder too. Nothing raises.

Not reported, because the sum is averaged or meant: `loss / k` (or
`loss = loss / k`, `loss /= k`, `loss * (1 / k)`, `torch.div(loss, k)`) on
the way to `backward()`, including inside `scaler.scale(...)`; gradients
rescaled before the step (`p.grad.div_(k)`, `optimizer.multiply_grads(...)`);
losses that sum over their batch on purpose (`reduction="sum"`,
`size_average=False`); an engine's `backward(loss)` (accelerate, DeepSpeed,
Lightning), which scales the loss by its own accumulation steps; and
optimizers that divide by the gradient's size (Adam, AdamW, RMSprop,
Adagrad, ...) or that the file does not show, where a constant factor changes
the update very little.

Opt-in for now: summing is sometimes the program's intent (a learning rate
tuned for the summed gradient is correct, if fragile), and the real code it
was measured on (`docs/real-world.md`) holds two accumulating loops, both
averaging, so its precision is still unmeasured. One correct shape it cannot
tell apart: contrastive training that caches the other micro-batches'
features (GradCache, open_clip's `accum_freq`) computes the whole batch's
loss at every micro-step, so there the sum of the micro-steps' gradients is
the right one; with SGD such a loop would be reported.

## Example
```python
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
```

## Use instead
```python
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    loss = criterion(model(x), y)
    (loss / accum_steps).backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
```

## Fix safety
Where k is a name, an attribute or a number, the fix backpropagates
`loss / k` instead of `loss` (inside `scaler.scale(...)` where there is one);
the loss value other code reads (logging, meters) stays as it was. It is
unsafe: it divides every step by k, which is the point, and a learning rate
tuned for the summed gradients must then be multiplied by k. The last window
of an epoch may hold fewer than k micro-batches; it is divided by k as well.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        reported = set()
        for acc in accumulations(file_model):
            if id(acc.backward) in reported or (stepped_class(file_model, acc.step) or "").rsplit(".", 1)[-1] \
                    not in _PROPORTIONAL or scaled_on_the_way(file_model, acc):
                continue
            reported.add(id(acc.backward))
            k = source_of(acc.every) if acc.every is not None and _plain(acc.every) else "k"
            yield self.report(acc.backward.node, _DETAIL.format(k=k), fix=_divide_fix(file_model, acc))

    valid = (
        """\
import torch


def train(model, loader, criterion, accum_steps=4):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler()
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss = loss / accum_steps
        scaler.scale(loss).backward()
        if (i + 1) % accum_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
        """\
import torch
import torch.nn as nn


def train(model, loader, accum_steps=4):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss(reduction="sum")
    for i, (x, y) in enumerate(loader):
        criterion(model(x), y).backward()  # summed over samples on purpose
        if (i + 1) % accum_steps == 0:
            for p in model.parameters():
                p.grad.div_(accum_steps * x.size(0))
            optimizer.step()
            optimizer.zero_grad()


def gan_step(netD, netG, opt_d, x, z, n_critic, it):
    opt_d = torch.optim.SGD(netD.parameters(), lr=0.01)
    opt_d.zero_grad()
    loss_d = netD(netG(z).detach()).mean() - netD(x).mean()
    loss_d.backward()
    if it % n_critic == 0:
        opt_d.step()  # every iteration clears first: nothing accumulates
""",
        """\
import torch


def finetune(model, batches, criterion, micro_steps):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(1000):
        for _ in range(micro_steps):
            x, y = next(batches)
            criterion(model(x), y).backward()  # Adam: the update barely depends on the gradient's scale
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, criterion, accum_steps=4):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y)
        loss.backward()  # expect: TL207
        if (i + 1) % accum_steps == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
import torch
from torch import optim

model = torch.nn.Linear(10, 1)
optimizer = optim.SGD(model.parameters(), lr=0.01)


def train_step(get_batch, grad_accum):
    optimizer.zero_grad()
    for micro_step in range(grad_accum):
        x, y = get_batch()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # expect: TL207
    optimizer.step()


def train_counter(loader, k):
    count = 0
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()  # expect: TL207
        count += 1
        if count == k:
            optimizer.step()
            optimizer.zero_grad()
            count = 0
""",
        """\
import torch
import torch.nn as nn
from torch import optim

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
criterion = nn.CrossEntropyLoss()


def amp(loader, accum):
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler()
    for step, (x, y) in enumerate(loader, 1):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()  # expect: TL207
        if not step % accum:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


def counter(loader, accum):
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    seen = 0
    for x, y in loader:
        outputs = model(x)
        loss = criterion(outputs, y) + 0.01 * outputs.pow(2).mean()
        loss.backward()  # expect: TL207
        seen = seen + 1
        if seen >= accum:
            optimizer.step()
            optimizer.zero_grad()
            seen = 0


def micro_steps(train_loader, steps):
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        for x, y in train_loader:
            loss = criterion(model(x), y)
            loss.backward()  # expect: TL207
        optimizer.step()
""",
    )


def _plain(expr: Optional[cst.BaseExpression]) -> bool:
    """A divisor the fix can write as it stands: a name, an attribute chain or a number."""
    return isinstance(expr, (cst.Name, cst.Attribute, cst.Integer))


def _divide_fix(file_model: FileModel, acc: Accumulation) -> Optional[Fix]:
    """``loss.backward()`` -> ``(loss / k).backward()``, ``scaler.scale(loss)`` -> ``scaler.scale(loss / k)``."""
    loss = backpropagated(file_model, acc.backward)
    every = acc.every
    if loss is None or every is None or not _plain(every):
        return None
    if not isinstance(every, cst.Integer) and _rebound_in_loop(acc, every):
        return None
    operand = loss if isinstance(loss, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or loss.lpar else \
        loss.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    divided = cst.BinaryOperation(left=operand, operator=cst.Divide(), right=every.with_changes(lpar=[], rpar=[]))
    receiver = acc.backward.node.func
    if isinstance(receiver, cst.Attribute) and receiver.value is loss:
        divided = divided.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return Fix(f"backpropagate the loss divided by {source_of(every)}", ((loss, divided),))


def _rebound_in_loop(acc: Accumulation, every: cst.BaseExpression) -> bool:
    """Is k's name bound inside the micro-batch loop (so that it may mean something else at the backward)?"""
    name = source_of(every)
    return any(acc.micro_loop.contains(a.order) and any(source_of(t) == name for t in a.targets)
               for a in acc.backward.scope.assignments)
