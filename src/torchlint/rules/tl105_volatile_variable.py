"""TL105: ``Variable(x, volatile=True)`` has been a no-op since PyTorch 0.4."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple, cast
import libcst as cst

from torchlint.edits import Statement, VolatileUnwrapper, is_self_assignment
from torchlint.model import FileModel, GradMode
from torchlint.model.legacy import variable_data, volatile_flag
from torchlint.model.tree import contains, statement_in_block
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding

# The release that made ``volatile`` a no-op (and brought ``torch.no_grad``).
_VOLATILE_IGNORED_SINCE = (0, 4)


class VolatileVariable(Rule):
    code = "TL105"
    name = "volatile-variable"
    message = (
        "Variable(..., volatile=True) has no effect since PyTorch 0.4, so this inference still "
        "records an autograd graph; pass the tensor itself and run the code under `with torch.no_grad():`"
    )
    fix_safety = "unsafe"
    needs = Text(r"Variable") & Text(r"volatile\s*=")
    docs = """
## What it does
Finds `torch.autograd.Variable(x, volatile=True)` (also through
`from torch.autograd import Variable`, `import Variable as V`, aliases of
`torch`, and a module-level lambda that hands its arguments to it:
`Variable = lambda *args, **kwargs: autograd.Variable(*args, **kwargs)`).

## Why is this bad
Before PyTorch 0.4, a volatile `Variable` told autograd not to record
anything computed from it: the way to run inference cheaply. Since 0.4 the
flag is ignored (with only a `UserWarning`), `Variable(x)` returns `x`, and
every forward pass on it records a graph and keeps the activations a
backward pass would need: old evaluation code silently takes the memory and
time of training. `torch.no_grad()` (or `torch.inference_mode()`) is what
replaced it.

Not reported: `volatile=False` (the old default, harmless), and calls
already under `no_grad`/`inference_mode`, where nothing is recorded anyway.
A `volatile=` that is not a literal (`volatile=not train`), and a call
through a lambda (which may also move the tensor), are reported without a
fix.

## Example
```python
for images, labels in val_loader:
    images = Variable(images, volatile=True)
    output = model(images)
    correct += (output.argmax(1) == labels).sum().item()
```

## Use instead
```python
for images, labels in val_loader:
    with torch.no_grad():
        output = model(images)
        correct += (output.argmax(1) == labels).sum().item()
```

## Fix safety
The fix replaces each `Variable(x, volatile=True)` by `x` and wraps the
statement holding it, with the rest of its block, in `with torch.no_grad():`:
volatility spread to everything computed from the variable, and in the code
that used it that is the rest of the block. (Wrapping only the statement
would leave `images = images` under `no_grad` and the forward pass that
follows recording a graph.) A statement left as `x = x` is dropped. It is unsafe: code later in the block that did
not depend on the variable now runs without grad too. In a generator, or at
module level, only the statement itself is wrapped.
"""

    torch_version = """
`volatile` has been ignored since PyTorch 0.4, which also brought
`torch.no_grad()`. For a target older than 0.4 (`target-torch-version =
"0.3"`) the flag still works and `no_grad` does not exist: the rule is silent.
From 0.4 on it reports as described.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code or file_model.target_torch_version < _VOLATILE_IGNORED_SINCE:
            return
        covered: set = set()  # calls a previous finding's fix already rewrites
        for call in file_model.calls:
            flag = volatile_flag(file_model, call)
            if flag is None or file_model.grad_at(call.site) is GradMode.NO_GRAD:
                continue
            fix = None
            if flag is True and id(call.node) not in covered:
                fix = self._fix(file_model, call, covered)
            yield self.report(call.node, fix=fix)

    def _fix(self, file_model: FileModel, call: CallSite, covered: set) -> Optional[Fix]:
        if variable_data(call.node) is None or file_model.qualify(call) is None:
            return None  # a lambda in between may also move the tensor: ``x`` is not the same
        found = statement_in_block(file_model.module, call.node, file_model.parents)
        if found is None:
            return None
        block, index = found
        # The casts: a block holds statement lines and compound statements, and the
        # unwrapper replaces expressions only, so each stays one.
        rest = cast("List[Statement]", list(block.body[index:]))
        if isinstance(block, cst.Module) or contains(cst.IndentedBlock(body=rest), (cst.Yield,)):
            rest = rest[:1]  # keep the context from spanning a module or a generator's yields
        rewriter = VolatileUnwrapper(file_model)
        moved = [cast("Statement", stmt.visit(rewriter)) for stmt in rest]
        covered.update(rewriter.replaced)
        moved = [stmt for stmt in moved if not is_self_assignment(stmt)] or [cst.SimpleStatementLine([cst.Pass()])]
        torch = file_model.names.torch_alias
        wrapped = cst.With(
            items=[cst.WithItem(cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name("no_grad"))))],
            body=cst.IndentedBlock(body=[moved[0].with_changes(leading_lines=())] + moved[1:]),
            leading_lines=rest[0].leading_lines,
        )
        edits: Tuple[Tuple[cst.CSTNode, cst.CSTNode], ...]
        if isinstance(block, cst.Module):
            edits = ((rest[0], wrapped),)
        else:
            body = list(block.body[:index]) + [wrapped] + list(block.body[index + len(rest):])
            edits = ((block, block.with_changes(body=body)),)
        return Fix("pass the tensor itself and run under `with torch.no_grad():`", edits,
                   imports=("torch",) if torch == "torch" else ())

    valid = (
        """\
import torch
from torch.autograd import Variable

x = Variable(torch.randn(4, 3), requires_grad=True)
y = (x ** 2).sum()
y.backward()
""",
        """\
import torch


def predict(model, images, cache):
    cache.configure(volatile=True)
    with torch.no_grad():
        return model(images).argmax(1)
""",
    )
    invalid = (
        """\
import torch
from torch.autograd import Variable


def predict(model, images):
    model.eval()
    inputs = Variable(images, volatile=True)  # expect: TL105
    return model(inputs).argmax(1)
""",
        """\
import torch as T


def embed(encoder, tokens):
    batch = T.autograd.Variable(tokens.cuda(), volatile=True)  # expect: TL105
    return encoder(batch).mean(1)
""",
    )
