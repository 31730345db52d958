"""TL508: ``torch.compile(model)`` as a statement of its own: the compiled wrapper is thrown away."""
from __future__ import annotations


from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from torchlint.edits import without_arg
from torchlint.model import FileModel
from torchlint.model.expr import dotted
from torchlint.model.torch_compile import compile_calls, compiled_target, result_discarded
from torchlint.rule import Fix, Rule
from torchlint.needs import TORCH_COMPILE_DISCARDED

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding

# nn.Module.compile(), the in-place spelling: not in torch 2.0; 2.2 keeps to the safe side
_MODULE_COMPILE_SINCE = (2, 2)


class CompileResultDiscarded(Rule):
    code = "TL508"
    name = "compile-result-discarded"
    message = ("torch.compile() returns a compiled wrapper and changes nothing in place; its result is thrown "
               "away here, so nothing is compiled: call model.compile(), or use the value torch.compile returns")
    torch_programs_only = True
    fix_safety = "unsafe"
    # any spelling (``from torch import compile as tc`` calls ``tc(model)``), as a statement of its own
    needs = TORCH_COMPILE_DISCARDED
    torch_version = """
The fix writes `model.compile(...)`, a method that came after `torch.compile`
(torch 2.0 has no `nn.Module.compile`). It is offered only for a target torch
version (`target-torch-version`) of 2.2 or newer, a bound kept on the safe
side; for an older target there is no fix, and the message's other way (use
the value `torch.compile` returns) stands.
"""
    docs = """
## What it does
Finds `torch.compile(...)` calls that are a statement of their own, their
value used by nothing: `torch.compile(model)` on a line by itself (however
`torch` is imported). `model.compile()`, `model = torch.compile(model)` and
`@torch.compile` are the ways that compile.

## Why is this bad
`torch.compile` does not change the module or function it is given: it
returns a new object (an `OptimizedModule` for a module) that compiles when
it is called. Thrown away, it compiles nothing: the program runs exactly as
without the line, every step in eager mode, while its author believes it is
compiled (and may tune batch sizes, or report speed-ups, on that belief).

## Example
```python
model = Net().to(device)
torch.compile(model)
for x, y in loader:
    loss_fn(model(x), y).backward()
    ...
```

## Use instead
```python
model = Net().to(device)
model.compile()
for x, y in loader:
    loss_fn(model(x), y).backward()
    ...
```
`model = torch.compile(model)` works too, but its `state_dict()` keys gain an
`_orig_mod.` prefix; `model.compile()` compiles the module in place and keeps them.

## Fix safety
For a name the file builds as a model (`model = Net()`, a `torchvision`
model, an `nn` layer), the fix rewrites `torch.compile(model, **options)` to
`model.compile(**options)`, the same options. It is unsafe: the program then
really compiles, which takes time at the first call of each new input shape
and can fail where the model does something `torch.compile` cannot trace.
A function (or a name the file does not show to be a model) gets no fix: assign
the result where it is used.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for call in compile_calls(file_model):
            if result_discarded(call):
                yield self.report(call.node, fix=self._fix(file_model, call))

    @staticmethod
    def _fix(file_model: FileModel, call: CallSite) -> Optional[Fix]:
        target = compiled_target(call)
        path = dotted(target)
        if (target is None or path is None or path not in file_model.roles.models
                or file_model.target_torch_version < _MODULE_COMPILE_SINCE):
            return None
        arg = next(a for a in call.node.args if a.value is target)
        options = without_arg(call.node, arg)
        in_place = options.with_changes(func=cst.Attribute(value=target, attr=cst.Name("compile")))
        return Fix("compile the model in place with model.compile()", ((call.node, in_place),))

    valid = (
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = Net()
model.compile()
head = torch.compile(nn.Linear(4, 2), mode="reduce-overhead")
print(model(torch.randn(2, 4)), head(torch.randn(2, 4)))
""",
        """\
import torch


@torch.compile(fullgraph=True)
def step(x):
    return x.sin() + x.cos()


def build(model, use_compile):
    compiled = torch.compile(model) if use_compile else model
    return compiled


compile(source, "<string>", "exec")  # Python's own compile
""",
    )
    invalid = (
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


def train(loader):
    model = Net()
    torch.compile(model, mode="max-autotune")  # expect: TL508
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
""",
        """\
import torch as T


def loss_fn(pred, target):
    return ((pred - target) ** 2).mean()


T.compile(loss_fn)  # expect: TL508
""",
    )
