"""TL602 (opt-in): ``zero_grad(set_to_none=False)`` keeps every gradient allocated between steps."""
from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from torchlint.edits import without_arg
from torchlint.model import CallSite, FileModel
from torchlint.model.expr import literal_bool
from torchlint.model.gradient_writes import writes_into_gradients
from torchlint.needs import Text
from torchlint.rule import Finding, Fix, Rule

_SET_TO_NONE_SINCE = (1, 7)  # the argument itself
_NONE_BY_DEFAULT_SINCE = (2, 0)  # Optimizer.zero_grad and Module.zero_grad default to set_to_none=True


def _set_to_none_arg(call: cst.Call) -> Optional[cst.Arg]:
    """The argument that passes ``set_to_none``: by keyword, or first and positional."""
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is not None and arg.keyword.value == "set_to_none":
            return arg
        if arg.keyword is None and index == 0:
            return arg
    return None


class ZeroGradToZeros(Rule):
    code = "TL602"
    name = "zero-grad-to-zeros"
    message = ("zero_grad(set_to_none=False) keeps every gradient allocated and fills it with zeros each step; "
               "let zero_grad free them (set_to_none=True, the default since torch 2.0)")
    default = False
    fix_safety = "unsafe"
    needs = Text(r"zero_grad\s*\(\s*(?:set_to_none\s*=\s*)?(?:False|0)\b")
    torch_version = """
`set_to_none=True` is the default of `Optimizer.zero_grad` and
`Module.zero_grad` since torch 2.0: the fix drops `set_to_none=False` there.
For an older target torch version (`target-torch-version`) it writes
`set_to_none=True` instead, which torch accepts since 1.7; before 1.7 there
is no fix.
"""
    docs = """
## What it does
Finds `optimizer.zero_grad(set_to_none=False)` and `model.zero_grad(False)`:
any `zero_grad` call that passes a literal `False` (or `0`) as
`set_to_none`. This is TorchFix's TOR402 and PyTorch profiler's
"Gradient Set To Zero Instead of None" pattern.

## Why is this bad
With `set_to_none=False` every parameter's `.grad` stays allocated from one
step to the next and is overwritten with zeros: one memset per parameter
per step, and the gradients' memory (as large as the model's parameters) is
held through the next forward pass, when the activations need it. With
`set_to_none=True` (the default since torch 2.0) the gradients are freed,
and `backward()` writes fresh ones. The parameters train to the same
values either way.

Not reported in a file that adds or copies into `.grad` itself (`p.grad += g`
in a parameter server, `p.grad.copy_(g)`): that code reads the gradient
before `backward()` and needs the zeros.

## Example
```python
for x, y in loader:
    optimizer.zero_grad(set_to_none=False)
    loss_fn(model(x), y).backward()
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
```

## Fix safety
The fix drops `set_to_none=False` (or writes `set_to_none=True` for a target
torch older than 2.0). It is unsafe: code that reads `.grad` between
`zero_grad()` and `backward()` (adding to it, clipping it, logging its norm)
finds `None` instead of a tensor of zeros, and an optimizer step on a
parameter that got no gradient skips it instead of applying zero.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if writes_into_gradients(file_model):  # code that adds into .grad needs the zeros
            return
        for call in file_model.calls:
            if call.method != "zero_grad" or call.receiver is None:
                continue
            arg = _set_to_none_arg(call.node)
            if arg is not None and literal_bool(arg.value) is False:
                yield self.report(call.node, fix=self._fix(file_model, call, arg))

    @staticmethod
    def _fix(file_model: FileModel, call: CallSite, arg: cst.Arg) -> Optional[Fix]:
        target = file_model.target_torch_version
        if target >= _NONE_BY_DEFAULT_SINCE:
            return Fix("drop set_to_none=False", ((call.node, without_arg(call.node, arg)),))
        if target >= _SET_TO_NONE_SINCE:
            freed = arg.with_changes(value=cst.Name("True"))
            return Fix("pass set_to_none=True", ((arg, freed),))
        return None

    valid = (
        """\
import torch


def train(model, optimizer, loader, loss_fn):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        model.zero_grad(set_to_none=True)
""",
        """\
def reset(trainer, keep):
    trainer.zero_grad(set_to_none=keep)  # a variable: the caller decides
    zero_grad(False)  # a function of this program, not torch's method
""",
        """\
import torch


def apply_remote_gradients(model, optimizer, remote):
    optimizer.zero_grad(set_to_none=False)  # the zeros are added into below
    for p, g in zip(model.parameters(), remote):
        p.grad += g
    optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, optimizer, loader, loss_fn):
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)  # expect: TL602
        loss_fn(model(x), y).backward()
        optimizer.step()
""",
        """\
# target-torch-version: 1.13
def step(model, optimizer, batch):
    model.zero_grad(False)  # expect: TL602
    model(batch).sum().backward()
    optimizer.step()
""",
    )
