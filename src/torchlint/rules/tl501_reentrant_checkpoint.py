"""TL501: activation checkpointing in its reentrant form (use_reentrant left out or True)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Tuple
import libcst as cst

from torchlint.model import FileModel
from torchlint.model.expr import dotted, keyword, literal_bool
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding

# Each function and the first release whose signature has ``use_reentrant`` (1.11 for
# ``checkpoint``; ``checkpoint_sequential`` got it in 2.0, pytorch/pytorch#86331):
# for an older target the advice cannot be followed, so nothing is reported.
_CHECKPOINTS = {
    "torch.utils.checkpoint.checkpoint": (1, 11),
    "torch.utils.checkpoint.checkpoint_sequential": (2, 0),
}
_NO_SPACE = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def shadowed(file_model: FileModel, call: CallSite) -> bool:
    """The callee's first name is rebound in this file: a local ``def checkpoint``, a
    fallback ``checkpoint = deepspeed...checkpoint``, a parameter of the function."""
    head = (call.callee or "").split(".", 1)[0]
    if head in file_model.functions or head in call.scope.params:
        return True
    return any(dotted(t) == head for a in file_model.module_scope.assignments for t in a.targets)


def _add_use_reentrant(call: cst.Call, current: Optional[cst.BaseExpression]) -> Tuple[cst.CSTNode, cst.CSTNode]:
    if current is not None:
        return current, cst.Name("False")
    arg = cst.Arg(keyword=cst.Name("use_reentrant"), value=cst.Name("False"), equal=_NO_SPACE)
    return call, call.with_changes(args=(*call.args, arg))


class ReentrantCheckpoint(Rule):
    code = "TL501"
    name = "reentrant-checkpoint"
    message = (
        "torch.utils.checkpoint without use_reentrant=False runs the reentrant variant, which gives "
        "no gradient to the checkpointed block's parameters when no input requires grad; "
        "pass use_reentrant=False"
    )
    fix_safety = "unsafe"
    torch_programs_only = True
    # ``torch.utils.checkpoint`` (any import of the module or its functions) or
    # ``from torch.utils import checkpoint`` (perhaps inside parentheses).
    needs = Text(r"utils\.checkpoint|from\s+torch\.utils\s+import\s+\(?[^)]*\bcheckpoint\b")
    docs = """
## What it does
Finds calls to `torch.utils.checkpoint.checkpoint` and
`checkpoint_sequential` (also imported as `from torch.utils.checkpoint
import checkpoint`, `import torch.utils.checkpoint as cp`, under an alias)
that leave out `use_reentrant` or pass `use_reentrant=True`.

## Why is this bad
Without `use_reentrant`, PyTorch (up to at least 2.13) runs the reentrant
implementation, which PyTorch itself recommends against (and warns about,
since 2.1):

- when none of the tensors passed in requires grad (the first block of a
  network fed raw data, a frozen embedding's output), the checkpointed block's
  output does not require grad either: its parameters silently get no
  gradient and never train;
- `torch.autograd.grad` and `backward(inputs=...)` do not work through it,
  nor do keyword arguments to the checkpointed function;
- it always recomputes the whole block and skips the check that the
  recomputation matched the forward pass.

`use_reentrant=False` has none of these problems and is what the warning
asks for.

Not reported: calls that pass `use_reentrant` as a variable
(`use_reentrant=self.use_reentrant`) or forward `**kwargs` that may hold it,
functions of the file's own that are called `checkpoint` (or a name that the
file rebinds), other libraries' checkpoint functions (DeepSpeed, FairScale,
Megatron), and test files, which exercise both variants on purpose.

## Example
```python
from torch.utils.checkpoint import checkpoint

def forward(self, x):
    x = checkpoint(self.stem, x)
    return self.head(x)
```

## Use instead
```python
from torch.utils.checkpoint import checkpoint

def forward(self, x):
    x = checkpoint(self.stem, x, use_reentrant=False)
    return self.head(x)
```

## Fix safety
The fix adds `use_reentrant=False` (or turns `True` into `False`). It is
unsafe because the two implementations differ in edge cases the code may rely
on: reentrant checkpoint under DistributedDataParallel with
`find_unused_parameters` or `static_graph`, functions whose recomputation
differs from the forward pass (the non-reentrant form raises then), hooks
that expect the reentrant backward, and PyTorch older than 1.11, which has
no `use_reentrant` argument.
"""

    torch_version = """
`checkpoint` takes `use_reentrant` since PyTorch 1.11 and
`checkpoint_sequential` since 2.0; for a target older than that the argument
does not exist (passing it raises "Unexpected keyword arguments"), so those
calls are not reported. Left out, `use_reentrant` means the reentrant variant
in every release up to at least 2.13 (torch 2.13's `torch/utils/checkpoint.py`
still sets `use_reentrant = True` when it is None, though its warning says a
later release will raise). Since 2.1 (pytorch/pytorch#100551) leaving it out
warns on each call; up to 2.0 it is silent, and this rule is the only one to
tell. The finding and its fix are the same
for every target from 1.11 (2.0 for `checkpoint_sequential`) on.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        target = file_model.target_torch_version
        for call in file_model.calls:
            since = _CHECKPOINTS.get(file_model.qualify(call) or "")
            if since is None or target < since or shadowed(file_model, call):
                continue
            if any(arg.star == "**" for arg in call.node.args):
                continue  # **kwargs may carry use_reentrant
            current = keyword(call.node, "use_reentrant")
            if current is not None and literal_bool(current) is not True:
                continue  # False, or decided elsewhere
            fix = Fix("pass use_reentrant=False", (_add_use_reentrant(call.node, current),))
            yield self.report(call.node, fix=fix)

    valid = (
        """\
import torch
from torch.utils.checkpoint import checkpoint


class Encoder(torch.nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x
""",
        """\
import torch


def resume(model, optimizer, path):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
""",
    )
    invalid = (
        """\
import torch
from torch.utils.checkpoint import checkpoint


class Encoder(torch.nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x)  # expect: TL501
        return x
""",
        """\
import torch.utils.checkpoint as cp


def forward_segments(layers, x):
    return cp.checkpoint_sequential(layers, 4, x, use_reentrant=True)  # expect: TL501
""",
    )
