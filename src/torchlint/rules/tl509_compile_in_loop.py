"""TL509: ``torch.compile`` of the same model or function run again in every iteration or forward pass."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchlint.model import FileModel
from torchlint.model.torch_compile import compile_calls, rebinds_its_target, repeated_compile
from torchlint.rule import Rule
from torchlint.needs import TORCH_COMPILE

if TYPE_CHECKING:
    from torchlint.rule import Finding

_WHERE = {
    "loop": "in every iteration of this loop",
    "forward": "in every forward pass",
    "caller": "every time a loop calls this function",
}


class CompileInLoop(Rule):
    code = "TL509"
    name = "compile-in-loop"
    message = ("torch.compile() of the same model or function runs again and again: each call builds a new "
               "compiled wrapper (set-up and guard checks every time, a recompile whenever its options differ); "
               "compile once, before the loop")
    torch_programs_only = True
    # any spelling (``from torch import compile as tc`` calls ``tc(model)``), always imported from torch
    needs = TORCH_COMPILE
    docs = """
## What it does
Finds `torch.compile(f)` calls that run many times on the same `f`:

- inside a loop, where nothing the call reads (the model, the function, the
  options) is bound by the loop, except the call's own result
  (`model = torch.compile(model)` at the top of every epoch);
- inside the `forward` of a module (`torch.compile(self.block)(x)`), which runs
  once per forward pass;
- inside a function that a loop of the same file calls, compiling something
  that is not the function's own parameter or variable.

Not reported: a call under an `if` in the loop or function (`if compiled is
None: ...`, compiling once), loops that compile something new each time
(`for block in model.blocks: torch.compile(block)`, `for mode in modes:
torch.compile(model, mode=mode)`), and loops that call `torch._dynamo.reset()`
or `torch.compiler.reset()`, which time a fresh compilation on purpose.

## Why is this bad
`torch.compile` builds a new wrapper at every call. Dynamo keeps the code it
compiled with the function's code object, so a wrapper with the same options
finds it again (torch 2.13 does not compile a second graph for it), but every
call pays for building the wrapper and for its first run's guard checks; any
difference in the options (a new backend object, a changed `options` dict)
compiles anew, and after `torch._dynamo.config.recompile_limit` (8) the
function falls back to eager mode for good, with only a warning.

Rebinding the result inside the loop is worse: the second pass compiles the
wrapper, and torch hands back a plain function of the original `forward`.
From then on the name holds no module: `model.train()`, `model.parameters()`
and `model.state_dict()` raise `AttributeError`, and the module's forward
hooks and pre-hooks no longer run (the function calls `forward` itself).

## Example
```python
for epoch in range(epochs):
    model = torch.compile(model)
    for x, y in loader:
        ...
```

## Use instead
```python
model.compile()
for epoch in range(epochs):
    for x, y in loader:
        ...
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for call in compile_calls(file_model):
            where = repeated_compile(file_model, call)
            if where is None:
                continue
            if where == "loop" and rebinds_its_target(call):
                yield self.report(call.node, message=(
                    "torch.compile() rebinds its own argument in every iteration: the second pass compiles the "
                    "compiled wrapper and hands back a plain function (no parameters(), train() or state_dict(), "
                    "no module hooks); compile once, before the loop"))
                continue
            yield self.report(call.node, message=self.message.replace("runs again and again", _WHERE[where]))

    valid = (
        """\
import torch
import torch._dynamo


def benchmark(model, x, modes):
    for mode in modes:
        compiled = torch.compile(model, mode=mode)
        compiled(x)
    for _ in range(3):
        torch._dynamo.reset()
        warm = torch.compile(model)
        warm(x)
""",
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self._fast = None

    def forward(self, x):
        if self._fast is None:
            self._fast = torch.compile(self.blocks[0])
        return self._fast(x)


model = Net()
for i, block in enumerate(model.blocks):
    model.blocks[i] = torch.compile(block)
for step, batch in enumerate(range(10)):
    if step == 0:
        model = torch.compile(model)
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, loss_fn, epochs):
    for epoch in range(epochs):
        model = torch.compile(model)  # expect: TL509
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()
""",
        """\
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(8, 8)

    def forward(self, x):
        return x + torch.compile(self.block)(x)  # expect: TL509


def score(x):
    return torch.compile(torch.nn.functional.gelu)(x)  # expect: TL509


for batch in torch.randn(10, 4, 8):
    print(score(batch))
""",
    )
