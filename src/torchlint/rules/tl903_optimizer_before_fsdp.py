"""TL903: an optimizer built from a model's parameters before FSDP wraps or shards that model."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.distributed import wraps
from torchlint.model.steps import held_parameters_of
from torchlint.model.expr import dotted
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.distributed import Wrap
    from torchlint.model.records import Assignment
    from torchlint.rule import Finding


def _built_later(file_model: FileModel, a: Assignment, wrap: Wrap) -> bool:
    """Is the optimizer's name bound again after the wrap (the optimizer rebuilt)?"""
    targets = {dotted(t) for t in a.targets} - {None}
    return any(b.order > wrap.call.order and b.kind == "assign" and targets & {dotted(t) for t in b.targets}
               for b in a.site.scope.assignments)


class OptimizerBeforeFsdp(Rule):
    code = "TL903"
    name = "optimizer-before-fsdp"
    message = ("optimizer built from the model's parameters before FSDP wraps or shards the model: FSDP replaces "
               "those parameters, so this optimizer steps tensors the model no longer uses and training does not "
               "move the model; build the optimizer after wrapping, from the wrapped model's parameters()")
    torch_programs_only = True
    needs = Text(r"FullyShardedDataParallel|fully_shard")
    docs = """
## What it does
Finds an optimizer (`torch.optim.*` or a known optimizer class) built from a
model's `parameters()` (or `named_parameters()`, or a list made from them)
before the same function hands that model to `FullyShardedDataParallel(model)`
or `fully_shard(model)`, where the optimizer is not built again afterwards.

## Why is this bad
FSDP does not train the parameters it is given: `fully_shard` replaces each
one with a sharded `DTensor` parameter, and `FullyShardedDataParallel` shards
them in place into parameters of its own (its documentation: "The optimizer
must be initialized after the module has been wrapped, since FSDP will shard
parameters in-place and this will break any previously initialized
optimizers"). An optimizer built before holds the old tensors. With
`fully_shard`, measured: backward writes its gradients to the new parameters,
`optimizer.step()` finds no gradient on the old ones and skips them; there is
no error, the loss is computed and logged every step, and the model never
changes. (DDP is different: it keeps the module's parameters, so an optimizer
built before `DistributedDataParallel(model)` is fine and not reported.)

## Example
```python
model = Transformer()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
for block in model.layers:
    fully_shard(block)
fully_shard(model)
```

## Use instead
```python
model = Transformer()
for block in model.layers:
    fully_shard(block)
fully_shard(model)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for wrap in wraps(file_model):
            if wrap.kind not in ("fsdp", "fully_shard") or wrap.model is None:
                continue
            scope, model = wrap.call.scope, wrap.model
            for a in scope.assignments:
                if a.order >= wrap.call.order:
                    break
                if a.kind != "assign" or not isinstance(a.value, cst.Call):
                    continue
                if not file_model.builds_optimizer(dotted(a.value.func)):
                    continue
                if not any(o == model or o.startswith(model + ".") for o in held_parameters_of(a)):
                    continue
                if not _built_later(file_model, a, wrap):
                    yield self.report(a.value)

    valid = (
        """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(model, head):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = DDP(model)  # DDP keeps the module's parameters
    for block in head.blocks:
        fully_shard(block)
    fully_shard(head)
    head_optimizer = torch.optim.AdamW(head.parameters(), lr=1e-4)
    return model, optimizer, head_optimizer


def rebuild(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = FSDP(model, use_orig_params=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, optimizer
""",
        """\
import torch
from torch.distributed.fsdp import fully_shard


def setup(model, teacher):
    teacher_optimizer = torch.optim.SGD(teacher.parameters(), lr=0.1)
    fully_shard(model)
    return teacher_optimizer
""",
    )
    invalid = (
        """\
import torch
from torch.distributed.fsdp import fully_shard


def setup(model):
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=3e-4)  # expect: TL903
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    return optimizer
""",
        """\
import torch
from torch.distributed.fsdp import FullyShardedDataParallel


def main(net, rank):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)  # expect: TL903
    model = FullyShardedDataParallel(net.to(rank), device_id=rank)
    for step in range(100):
        optimizer.zero_grad()
        model(torch.randn(8, 16, device=rank)).sum().backward()
        optimizer.step()
""",
    )
