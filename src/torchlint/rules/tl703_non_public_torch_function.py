"""TL703 (opt-in): a private torch name used where its public twin is the same thing."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional
import libcst as cst

from torchlint.diagnostic import Applicability
from torchlint.edits import renamed_reference
from torchlint.model import FileModel
from torchlint.model.expr import dotted
from torchlint.model.torch_api import NON_PUBLIC, api_calls, lookup
from torchlint.model.walk import walk
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.model.torch_api import ApiChange
    from torchlint.rule import Finding


def _rename(file_model: FileModel, scope: Scope, node: cst.BaseExpression, written: Optional[str], change: ApiChange,
            member: str, applicability: Applicability) -> Optional[Fix]:
    assert change.rename is not None  # asked of renamed functions
    public = change.rename + member
    renamed = renamed_reference(file_model, scope, written, change.name + member, public)
    if renamed is None:
        return None
    new, imports = renamed
    return Fix(f"use {public}", ((node, new),), imports=imports, applicability=applicability)


def _class_defs(file_model: FileModel) -> list:
    found = []
    walk(file_model.module, lambda node: found.append(node) if isinstance(node, cst.ClassDef) else None,
         lambda node: None)
    return found


class NonPublicTorchFunction(Rule):
    code = "TL703"
    name = "non-public-torch-function"
    message = "a private torch name with a public twin; use the public one"
    default = False
    fix_safety = "unsafe"  # the call fixes are safe; a class base's is not (see Fix safety)
    needs = Text(r"_utils|_LRScheduler|_tensor")
    torch_version = """
Reported when the target torch version (`target-torch-version`) has the
public name: `torch.utils.data.default_collate` and `default_convert` from
1.11, `torch.optim.lr_scheduler.LRScheduler` from 2.0,
`torch.distributed.tensor` (DTensor) from 2.5,
`torch.utils.data.get_worker_info` for any supported target.
"""
    docs = """
## What it does
Finds uses of private torch names whose public twin is the same function or
class: `torch.utils.data._utils.collate.default_collate` and
`default_convert` (public as `torch.utils.data.default_collate` and
`default_convert`), `torch.utils.data._utils.worker.get_worker_info`
(`torch.utils.data.get_worker_info`), DTensor's old home
`torch.distributed._tensor` (`DTensor`, `distribute_tensor`,
`distribute_module`, `Shard`, `Replicate`, `Partial`, `Placement`, now in
`torch.distributed.tensor`; members such as `DTensor.from_local(...)` too),
and the learning-rate scheduler base class
`torch.optim.lr_scheduler._LRScheduler` (`LRScheduler`), in calls and as
the base of a class.

## Why is this bad
A leading underscore tells users the name may move or disappear without a
deprecation period; the public twin is the supported spelling of the very
same object (for `default_collate`, `default_convert`, `get_worker_info`
and the DTensor names, torch 2.13 exports one object under both names;
`_LRScheduler` is an empty subclass of `LRScheduler` kept only for old code).

## Example
```python
from torch.utils.data._utils.collate import default_collate
from torch.optim.lr_scheduler import _LRScheduler

class WarmUp(_LRScheduler):
    ...

batch = default_collate(samples)
```

## Use instead
```python
from torch.utils.data import default_collate
from torch.optim.lr_scheduler import LRScheduler

class WarmUp(LRScheduler):
    ...

batch = default_collate(samples)
```

## Fix safety
The fix writes the public name (through `torch`, adding `import torch` if
the file lacks it; the private import is left for a person or an
unused-import fixer to remove). For the data-loading functions it is safe:
the two names are one object. For a `_LRScheduler` base it is unsafe: code
elsewhere that tests `isinstance(scheduler, _LRScheduler)` (some older
training frameworks did) no longer recognises the class.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for call, change, member in api_calls(file_model, NON_PUBLIC, members=True):
            fix = _rename(file_model, call.scope, call.node.func, call.callee, change, member, Applicability.SAFE)
            yield self.report(call.node, f"{change.name}{member} is private; use {change.replacement}{member}",
                              fix=fix)
        yield from self._class_bases(file_model)

    def _class_bases(self, file_model: FileModel) -> Iterator[Finding]:
        for node in file_model.derived(_class_defs):
            for base in node.bases:
                written = dotted(base.value)
                change, member = lookup(NON_PUBLIC, file_model.names.qualify(written))
                if change is None or change.since > file_model.target_torch_version:
                    continue
                fix = _rename(file_model, file_model.module_scope, base.value, written, change, member,
                              Applicability.UNSAFE)
                yield self.report(base.value, f"{change.name} is private; subclass {change.replacement}", fix=fix)

    valid = (
        """\
import torch
from torch.utils.data import DataLoader, default_collate


def collate(samples):
    images, labels = default_collate(samples)
    return images.float() / 255, labels


loader = DataLoader(range(10), batch_size=4, collate_fn=collate)
""",
        """\
import torch
from torch.optim.lr_scheduler import LRScheduler


class WarmUp(LRScheduler):
    def __init__(self, optimizer, steps):
        self.steps = steps
        super().__init__(optimizer)

    def get_lr(self):
        scale = min(1.0, (self.last_epoch + 1) / self.steps)
        return [base * scale for base in self.base_lrs]
""",
        """\
import torch
from mylib._utils import default_collate


def collate(samples):
    return default_collate(samples)
""",
    )
    invalid = (
        """\
import torch
from torch.utils.data._utils.collate import default_collate


def collate(samples):
    images, labels = default_collate(samples)  # expect: TL703
    return images.float() / 255, labels
""",
        """\
import torch
from torch.optim.lr_scheduler import _LRScheduler


class WarmUp(_LRScheduler):  # expect: TL703
    def get_lr(self):
        return [base * min(1.0, (self.last_epoch + 1) / 100) for base in self.base_lrs]
""",
    )
