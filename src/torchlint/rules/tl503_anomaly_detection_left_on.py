"""TL503: autograd anomaly detection switched on unconditionally in training code."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional
from torchlint.model import FileModel
from torchlint.model.expr import keyword, literal_bool, positional
from torchlint.model.guards import conditional_calls
from torchlint.model.vocab import tokens
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Scope
    from torchlint.rule import Finding

_ANOMALY = frozenset(
    f"torch.autograd.{module}{name}"
    for module in ("", "anomaly_mode.") for name in ("set_detect_anomaly", "detect_anomaly")
)
# Functions named for debugging switch anomaly mode on on purpose; so do debugging scripts.
_DEBUG_WORDS = frozenset("debug debugging anomaly anomalies nan nans sanity check test tests".split())
_DEBUG_FILE_WORDS = frozenset(("debug", "debugging"))


def _switches_on(file_model: FileModel, call: CallSite) -> bool:
    """``detect_anomaly()`` always does; ``set_detect_anomaly`` only with a literal True."""
    if (file_model.qualify(call) or "").endswith(".detect_anomaly"):
        return True
    flag = positional(call.node, 0) or keyword(call.node, "mode")
    return literal_bool(flag) is True


def _trains(file_model: FileModel) -> bool:
    """The file backpropagates, steps an optimizer or hands a model to a Lightning Trainer."""
    return any(
        file_model.is_training_call(c)
        or (c.method == "fit" and "trainer" in (c.receiver or "").lower())
        for c in file_model.calls
    ) or any(name == "training_step" for _, name in file_model.methods)


def _on_at_import(file_model: FileModel, call: CallSite) -> bool:
    """``set_detect_anomaly(True)`` in a module's own code: importing the module switches
    anomaly mode on for the whole process, for whatever training code imports it."""
    return call.scope.is_module and (file_model.qualify(call) or "").endswith(".set_detect_anomaly")


def _debug_named(file_model: FileModel, scope: Scope) -> bool:
    base = file_model.path.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if any(t in _DEBUG_FILE_WORDS for t in tokens(base)):
        return True
    return any(t in _DEBUG_WORDS for s in _enclosing(scope) for t in tokens(s.name))


def _enclosing(scope: Scope) -> Iterator[Scope]:
    current: Optional[Scope] = scope
    while current is not None and not current.is_module:
        yield current
        current = current.parent


class AnomalyDetectionLeftOn(Rule):
    code = "TL503"
    name = "anomaly-detection-left-on"
    message = (
        "autograd anomaly detection is on in training code: every operation records a stack trace "
        "and backward checks for NaN, a large slowdown meant for debugging; remove it or put it "
        "behind a debug flag"
    )
    torch_programs_only = True
    needs = Text(r"detect_anomaly")
    docs = """
## What it does
Finds `torch.autograd.set_detect_anomaly(True)` and
`with torch.autograd.detect_anomaly():` (however `torch.autograd` is
imported: `from torch import autograd`, `import torch.autograd as ag`,
`from torch.autograd import set_detect_anomaly`) in files that train (they
call `backward()`, step an optimizer or fit a Lightning `Trainer`), when
nothing makes them conditional. `set_detect_anomaly(True)` in a module's own
top-level code is reported in any module: importing it switches anomaly mode
on for the whole process, so the training code that imports a `utils.py` or
a `models/__init__.py` pays for it.

## Why is this bad
Anomaly mode is a debugging aid. While it is on, every forward operation
captures a Python stack trace for its autograd node and every backward
function's result is checked for NaN, which synchronises with the device on
each node. Training runs several times slower, and on GPU the checks also
break up asynchronous execution. Left in after a NaN hunt, it costs every
run that follows.

Not reported: `set_detect_anomaly(args.debug)` or any flag that is not a
literal `True`, calls inside an `if` (`if debug:`, `if cfg.detect_anomaly:`),
`set_detect_anomaly(False)`, unit tests, files and functions named for
debugging (`debug_nan.py`, `def check_anomalies()`), and, in files that do
not train, anomaly mode switched on inside a function (the caller decides
when that runs) or for one `with` block.

## Example
```python
torch.autograd.set_detect_anomaly(True)
for x, y in loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
```

## Use instead
```python
torch.autograd.set_detect_anomaly(args.detect_anomaly)  # off unless asked for
for x, y in loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        candidates = [c for c in file_model.calls if file_model.qualify(c) in _ANOMALY and _switches_on(file_model, c)]
        if not candidates:
            return
        trains = _trains(file_model)
        guarded = conditional_calls(file_model)
        for call in candidates:
            if id(call.node) in guarded or _debug_named(file_model, call.scope):
                continue
            if trains or _on_at_import(file_model, call):
                yield self.report(call.node)

    valid = (
        """\
import torch


def train(model, loader, optimizer, criterion, debug=False):
    torch.autograd.set_detect_anomaly(debug)
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion, args):
    if args.debug:
        torch.autograd.set_detect_anomaly(True)
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
        """\
import os

import torch

if os.environ.get("TORCH_ANOMALY"):
    torch.autograd.set_detect_anomaly(True)


def configure_autograd(cfg):
    torch.autograd.set_detect_anomaly(cfg.detect_anomaly)


def accuracy(logits, labels):
    return (logits.argmax(1) == labels).float().mean()
""",
    )
    invalid = (
        """\
import torch

torch.autograd.set_detect_anomaly(True)  # expect: TL503


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
        """\
import torch
from torch import autograd


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        with autograd.detect_anomaly():  # expect: TL503
            criterion(model(x), y).backward()
        optimizer.step()
""",
        """\
import torch
from torch.autograd import set_detect_anomaly

set_detect_anomaly(True)  # expect: TL503


def accuracy(logits, labels):
    return (logits.argmax(1) == labels).float().mean()
""",
    )
