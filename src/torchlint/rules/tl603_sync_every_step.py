"""TL603 (opt-in): a device tensor read to the host every training step, where an aggregate would do."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.host_reads import host_reads, kept_only
from torchlint.model.hot_loops import every_iteration, hot_loops
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

_SPELLING = {"item": ".item()", "tolist": ".tolist()", "cpu": ".cpu()", "float": "float()", "int": "int()",
             "print": "print()"}
_ADVICE = ("every training step makes the CPU wait for the GPU each step; keep the running value on the device "
           "(total += loss.detach()) and read it once per epoch or every N steps")


class SyncEveryStep(Rule):
    code = "TL603"
    name = "sync-every-step"
    message = f"reading a device tensor on the host (.item(), .cpu(), .tolist(), float(), print) {_ADVICE}"
    torch_programs_only = True
    default = False
    needs = Text(r"cuda") & Text(r"item\(|cpu|tolist\(|float\(|int\(|print\(")
    docs = """
## What it does
Finds a device tensor read back to the host, by `.item()`, `.cpu()`,
`.to("cpu")`, `.tolist()`, `float()`, `int()` or `print()`, on every
iteration of a training loop, when the value read is only kept: summed
(`running_loss += loss.item()`), appended to a list, handed to a meter, a
logger, a progress bar or `print`. Opt-in: enable with
`extend-select = ["TL603"]`.

The loop is the *step loop* of a file that trains on CUDA (moves tensors or
models there with `.cuda()` or `.to(device)`): the innermost loop whose
iteration runs `backward()` or an optimizer step, same-module helpers
included. The tensor is one the file's code puts on the device: a forward
pass or loss, what `.cuda()`/`.to(device)` return, and what is computed from
those.

Not reported, because the read is deliberate or needed:

- reads under an `if` in the loop: a logging interval (`if step % 100 == 0:`),
  the last batch of an epoch, a debug switch;
- reads outside the step loop: once per epoch, after training;
- a value that something needs at once: an `if` or `while` test (an early
  stop, `if not math.isfinite(loss.item())`), an index, a comparison, an
  argument of a function that acts on it (`env.step(action.item())`), a
  `return`;
- every read of a loop that already needs one such value each step: the
  host waits there anyway, and the other reads add little;
- evaluation loops, files that never move work to CUDA, unit tests.

## Why is this bad
CUDA runs kernels asynchronously: while the GPU computes step *k*, the
Python code can already load and copy batch *k+1* and queue its kernels.
Reading a device tensor on the host copies it, and the copy waits until
every kernel queued before it has run. One `.item()` per step turns that
overlap into a wait on every step: the GPU idles while the host loads the
next batch, and the host idles while the GPU computes. torch's
performance tuning guide lists `.item()`, `.cpu()` and `print` of a CUDA
tensor among the calls to avoid in a hot loop. A running sum kept on the
device costs one small kernel per step and one read when it is printed.

## Example
```python
for epoch in range(epochs):
    running_loss = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    print(epoch, running_loss / len(loader))
```

## Use instead
```python
for epoch in range(epochs):
    running_loss = torch.zeros((), device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()
    print(epoch, running_loss.item() / len(loader))
```
or read inside a logging interval (`if step % 100 == 0:`).
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for loop in hot_loops(file_model):
            reads = [read for read in host_reads(file_model, loop) if every_iteration(file_model, read.call, loop)]
            if any(not kept_only(file_model, read, loop) for read in reads):
                continue  # the step waits for a value it needs anyway
            statements = set()
            for read in reads:
                if id(read.call.site.stmt) in statements:
                    continue  # one wait per statement: after the first read, the device is idle
                statements.add(id(read.call.site.stmt))
                yield self.report(read.call.node, message=f"{_SPELLING[read.kind]} of a device tensor {_ADVICE}")

    valid = (
        """\
import torch

device = torch.device("cuda")


def train(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        total = torch.zeros((), device=device)
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.detach()
            if step % 100 == 0:
                print(step, loss.item())  # a logging interval
        print(epoch, total.item() / len(loader))  # once per epoch
""",
        """\
import math
import sys

import torch


def train(model, loader, optimizer, criterion, meter):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = criterion(model(x), y)
        loss_value = loss.item()
        if not math.isfinite(loss_value):  # the step needs the value: stop before NaNs spread
            sys.exit(1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        meter.update(loss=loss.item())
""",
        """\
import torch


def run(policy, env, optimizer, steps):
    state = env.reset()
    for _ in range(steps):
        logits = policy(torch.as_tensor(state).cuda())
        action = logits.argmax()
        state, reward, done, _ = env.step(action.item())  # the environment needs the action now
        loss = -logits.log_softmax(-1)[action] * reward
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(model, loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        running_loss, correct = 0.0, 0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()  # expect: TL603
            correct += (out.argmax(1) == y).sum().item()  # expect: TL603
        print(epoch, running_loss, correct)
""",
        """\
import torch

losses = []
for images, labels in train_loader:
    images, labels = images.cuda(), labels.cuda()
    loss = criterion(net(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.cpu())  # expect: TL603
    print(loss)  # expect: TL603
""",
    )
