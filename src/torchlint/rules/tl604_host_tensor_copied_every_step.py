"""TL604 (opt-in): a tensor made on the CPU and copied to the device on every training step."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from torchlint.edits import with_keyword
from torchlint.model import FileModel
from torchlint.model.expr import dotted, positional
from torchlint.model.host_copies import FILL_FACTORIES, HostCopy, host_copies
from torchlint.model.grad_flow import unconditional
from torchlint.model.hot_loops import every_iteration, hot_loops, per_step_functions
from torchlint.model.vocab import last_name, tokens
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.rule import Finding

# Fills whose values are the same made on either device, bit for bit (ranges are left
# out: a float arange or linspace computed by a CUDA kernel may round differently).
_EXACT_FILLS = frozenset("zeros ones full empty eye".split())
# Factory arguments after which device= would not make the same tensor.
_NO_FIX_KEYWORDS = frozenset(("device", "requires_grad", "out", "pin_memory", "layout"))
_DEVICE_WORDS = frozenset(("device", "dev", "gpu", "cuda", "rank"))
_INVARIANT = ("made on the CPU and copied to the device on every training step, with the same value each time; "
              "make it once before the loop (or on the device, with device=)")
_MADE_BEFORE = ("made on the CPU before the loop is copied to the device again on every training step; copy it "
                "once, before the loop")
_FILL = ("made on the CPU and copied to the device on every training step; make it on the device "
         "(device=) so that no copy is needed")


class HostTensorCopiedEveryStep(Rule):
    code = "TL604"
    name = "host-tensor-copied-every-step"
    message = ("tensor made on the CPU and copied to the device on every training step; make it once before the "
               "loop, or on the device with device=")
    torch_programs_only = True
    default = False
    fix_safety = "safe"
    needs = Text(r"cuda") & Text(r"\.(?:to|cuda)\(")
    docs = """
## What it does
Finds a tensor that a torch factory makes on the CPU (`torch.tensor`,
`torch.zeros`, `torch.ones`, `torch.full`, `torch.arange`, `torch.eye`,
`torch.FloatTensor`, ... with no `device=`) and that `.to(device)` or
`.cuda()` copies to the device on every iteration of a training loop:

- when the factory's arguments are the same on every iteration (literals,
  names the loop never rebinds: `torch.ones(batch_size, 1).to(device)`,
  `torch.tensor([0.5, 2.0]).cuda()`), or the tensor was made once before the
  loop and is copied inside it (`mean.to(device)`);
- when the factory is a fill or a range whose size changes with the batch
  (`torch.zeros(x.size(0)).to(device)`): made on the device with `device=`,
  it needs no copy at all.

Opt-in: enable with `extend-select = ["TL604"]`. The loop is the step loop
of a file that trains on CUDA, as for TL603: the innermost loop whose
iteration runs `backward()` or an optimizer step; a function of the file
that every step calls (a gradient penalty helper) counts as part of the
step, its parameters and locals taken to change from call to call. Copies
under an `if` are not reported, nor random tensors (`torch.randn(...).to(device)`: new values
every step), nor data made from the batch (`torch.tensor(batch_lengths)`).

## Why is this bad
Each step allocates a host tensor, fills it, and copies it to the device.
A copy from ordinary (pageable) memory without `non_blocking=True` makes
the host wait for the device's queue to drain, so the CPU cannot run ahead
of the GPU; even a small copy costs a transfer's latency. A value that never
changes needs one copy, before the loop; a fill needs none, since a kernel
writes it on the device.

## Example
```python
for images, _ in loader:
    images = images.to(device)
    real = torch.ones(batch_size, 1).to(device)
    loss = criterion(discriminator(images), real)
    ...
```

## Use instead
```python
real = torch.ones(batch_size, 1, device=device)
for images, _ in loader:
    images = images.to(device)
    loss = criterion(discriminator(images), real)
    ...
```

## Fix safety
For `torch.zeros`, `ones`, `full`, `empty` and `eye` moved by `.to(device)`
or `.cuda()` alone, the fix makes the tensor on the device: `torch.ones(n,
1).to(device)` becomes `torch.ones(n, 1, device=device)`. The tensor is the
same (values, dtype, device; a fresh tensor that requires no gradient), so
the fix is safe. It does not hoist anything out of the loop (the tensor may
be changed in place later in the step), and it leaves ranges, data and
`requires_grad=True` tensors alone.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        reported = set()
        for loop in hot_loops(file_model):
            copies = [c for c in host_copies(file_model, loop) if every_iteration(file_model, c.call, loop)]
            for helper in per_step_functions(file_model, loop):
                copies += [c for c in host_copies(file_model, helper) if unconditional(file_model, c.call, helper)]
            for copy in copies:
                if id(copy.call.node) in reported:
                    continue  # a helper two step loops call
                if copy.made_before:
                    message = f"torch.{copy.name}(...) {_MADE_BEFORE}"
                elif copy.invariant:
                    message = f"torch.{copy.name}(...) {_INVARIANT}"
                elif copy.name in FILL_FACTORIES:
                    message = f"torch.{copy.name}(...) {_FILL}"
                else:
                    continue  # data that changes: it must travel to the device
                reported.add(id(copy.call.node))
                yield self.report(copy.call.node, message=message, fix=self._fix(copy))

    @staticmethod
    def _fix(copy: HostCopy) -> Optional[Fix]:
        """``torch.zeros(n).to(device)`` -> ``torch.zeros(n, device=device)``."""
        call = copy.call.node
        func = call.func
        if copy.name not in _EXACT_FILLS or not isinstance(func, cst.Attribute) or func.value is not copy.factory:
            return None
        factory = copy.factory
        if any(arg.star or (arg.keyword is not None and arg.keyword.value in _NO_FIX_KEYWORDS)
               for arg in factory.args):
            return None
        target = _device_argument(call)
        if target is None:
            return None
        return Fix("make it on the device (device=)", ((call, with_keyword(factory, "device", target)),))

    valid = (
        """\
import torch

device = torch.device("cuda")


def train(generator, discriminator, loader, criterion, opt_d, batch_size, nz):
    real = torch.ones(batch_size, 1, device=device)  # made once, on the device
    for images, _ in loader:
        images = images.to(device)
        noise = torch.randn(batch_size, nz).to(device)  # new values every step
        lengths = torch.tensor([len(images)]).to(device)  # from the batch
        loss = criterion(discriminator(images), real) + criterion(discriminator(generator(noise)), 1 - real)
        opt_d.zero_grad()
        loss.backward()
        opt_d.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion, weights):
    class_weights = torch.tensor(weights).cuda()  # copied once, before the loop
    for step, (x, y) in enumerate(loader):
        x, y = x.cuda(), y.cuda()
        loss = criterion(model(x), y) * class_weights[y]
        optimizer.zero_grad()
        loss.mean().backward()
        optimizer.step()
        if step == 0:
            print(torch.zeros(1).cuda())  # only on the first step
""",
    )
    invalid = (
        """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(discriminator, loader, criterion, optimizer, batch_size):
    for images, _ in loader:
        images = images.to(device)
        real = torch.ones(batch_size, 1).to(device)  # expect: TL604
        fake = torch.zeros(images.size(0), 1).to(device)  # expect: TL604
        loss = criterion(discriminator(images), real) + criterion(discriminator(images.flip(0)), fake)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        """\
import torch

mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
for x, y in train_loader:
    x = (x.cuda() - mean.cuda())  # expect: TL604
    weight = torch.FloatTensor([1.0, 3.0]).cuda()  # expect: TL604
    loss = torch.nn.functional.cross_entropy(model(x), y.cuda(), weight=weight)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    )


def _device_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """What ``device=`` gets for ``.cuda()``, ``.cuda(i)`` or ``.to(device)``; None when the call
    passes anything else (a dtype, ``non_blocking``) or a target that may not be a device."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    if any(arg.keyword is not None or arg.star for arg in call.args) or len(call.args) > 1:
        return None
    target = positional(call, 0)
    if func.attr.value == "cuda":
        return target if target is not None else cst.SimpleString('"cuda"')
    if target is None:
        return None
    if isinstance(target, cst.SimpleString) or (isinstance(target, cst.Call) and
                                                (dotted(target.func) or "").endswith("device")):
        return target
    path = dotted(target)
    if path is not None and any(t in _DEVICE_WORDS for t in tokens(last_name(path))):
        return target
    return None
