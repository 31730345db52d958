"""TL601 (opt-in): a DataLoader feeding CUDA training loads in the main process or without pinned memory."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator
from torchlint.model import FileModel
from torchlint.model.devices import moves_to_cuda
from torchlint.model.expr import keyword
from torchlint.needs import Text
from torchlint.rule import Rule

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.rule import Finding

_DATALOADERS = frozenset(("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"))
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, ...)
_POSITION = {"num_workers": 5, "pin_memory": 7}
_ONLY = {
    "num_workers": ("DataLoader in CUDA training without num_workers loads every batch in the training "
                    "process while the GPU waits; set num_workers"),
    "pin_memory": ("DataLoader in CUDA training without pin_memory copies batches from pageable memory, "
                   "which cannot overlap with compute; set pin_memory=True"),
}


def missing_options(call: cst.Call) -> list:
    """The throughput options a DataLoader call leaves at their defaults."""
    positional = sum(1 for arg in call.args if arg.keyword is None and not arg.star)
    return [name for name, index in _POSITION.items()
            if keyword(call, name) is None and positional <= index]


class DataLoaderWithoutWorkers(Rule):
    code = "TL601"
    name = "dataloader-without-workers"
    message = (
        "DataLoader in CUDA training without num_workers/pin_memory loads batches in the training "
        "process and copies them from pageable memory, so the GPU waits; set num_workers and "
        "pin_memory=True"
    )
    torch_programs_only = True
    default = False
    needs = Text(r"DataLoader") & Text(r"cuda")
    docs = """
## What it does
Finds `torch.utils.data.DataLoader(...)` calls that set neither
`num_workers` nor `pin_memory` (or only one of them), in files that train
(call `backward()` or step an optimizer) and move tensors to a CUDA device
(`.cuda()`, `.to("cuda")`, `.to(device)` with `device` bound to a CUDA
device in the same file). Opt-in: enable with `extend-select = ["TL601"]`.

## Why is this bad
With the default `num_workers=0` every batch is loaded, decoded and
augmented in the training process, between GPU steps, so the GPU idles
while the CPU works. Without `pin_memory=True` each host-to-device copy
goes through pageable memory and cannot overlap with compute (even with
`non_blocking=True`). On image and audio pipelines either can cost more
time than the model.

Not reported: calls that pass `num_workers` and `pin_memory` (any value:
`num_workers=0` is a choice), calls that forward `**kwargs`, other libraries'
`DataLoader` classes, files that never move data to CUDA or do not train,
and test files. Data already on the GPU (a `TensorDataset` of CUDA tensors)
needs neither option; silence the finding there with `# noqa: TL601`.

## Example
```python
loader = DataLoader(dataset, batch_size=64, shuffle=True)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    ...
```

## Use instead
```python
loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
for x, y in loader:
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    ...
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        loaders = [c for c in file_model.calls if file_model.qualify(c) in _DATALOADERS
                   and not any(arg.star == "**" for arg in c.node.args) and missing_options(c.node)]
        if not loaders or not moves_to_cuda(file_model):
            return
        if not any(map(file_model.is_training_call, file_model.calls)):
            return
        for call in loaders:
            missing = missing_options(call.node)
            yield self.report(call.node, message=_ONLY[missing[0]] if len(missing) == 1 else None)

    valid = (
        """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, criterion):
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
        """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, criterion):
    loader = DataLoader(dataset, batch_size=64, shuffle=True)
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, criterion):
    loader = DataLoader(dataset, batch_size=64, shuffle=True)  # expect: TL601
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
        """\
import torch

device = torch.device("cuda")


def train(model, dataset, optimizer, criterion):
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=4)  # expect: TL601
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x.to(device)), y.to(device)).backward()
        optimizer.step()
""",
    )
