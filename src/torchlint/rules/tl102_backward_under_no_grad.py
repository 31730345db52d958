"""TL102: a loss computed under no_grad/inference_mode is backpropagated."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional
import libcst as cst

from torchlint.model import FileModel, GradMode, flow_back
from torchlint.model.expr import bound_paths, positional, referenced_paths
from torchlint.model.modes import calls_in_node
from torchlint.model.vocab import is_optimizer_name
from torchlint.rule import Rule
from torchlint.needs import BACKWARD, COMPUTES_GRADIENTS, Text

if TYPE_CHECKING:
    from torchlint.model.records import CallSite
    from torchlint.rule import Finding


class BackwardUnderNoGrad(Rule):
    code = "TL102"
    name = "backward-under-no-grad"
    message = (
        "backward() of a loss computed under no_grad()/inference_mode(): no graph was recorded, so "
        "it raises or trains nothing; run the forward pass and loss outside the no-grad region"
    )
    torch_programs_only = True
    needs = Text(r"no_grad|inference_mode|set_grad_enabled") & COMPUTES_GRADIENTS & (BACKWARD | Text("autograd"))

    docs = """
## What it does
Finds `loss.backward()` (also `torch.autograd.backward`, `torch.autograd.grad`
and Lightning's `manual_backward`) where both the call and the forward pass
or loss computation that produced its tensor run with grad disabled: inside
`with torch.no_grad():`, `torch.inference_mode()` or
`torch.set_grad_enabled(False)`, in a function decorated with one of them,
or in a function of the same module that is only called from such a region.

## Why is this bad
Under `no_grad` autograd records nothing, so the loss has no `grad_fn`:
`backward()` raises `RuntimeError: element 0 of tensors does not require
grad and does not have a grad_fn` (under `inference_mode` a similar error).
The common "fix" of forcing `loss.requires_grad = True` silences the error
and trains nothing: every parameter's `.grad` stays `None` and
`optimizer.step()` leaves the model as it was. This typically happens when a
training step is copied from evaluation code, or a whole training loop is
wrapped in `no_grad` "to save memory".

Not reported: `torch.enable_grad()` inside the region (it re-enables
recording), `set_grad_enabled(flag)` with a flag we cannot read,
`backward()` under `no_grad` of a loss whose graph was recorded outside the
region (grad mode does not affect the backward pass itself), and
`optimizer.step()` under `no_grad`, which is what optimizers do themselves
(custom optimizers' `@torch.no_grad()` `step` methods, manual SGD).

## Example
```python
@torch.no_grad()
def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for call in file_model.calls:
            if not file_model.is_differentiation(call):
                continue
            if file_model.grad_at(call.site) is not GradMode.NO_GRAD or _in_optimizer(file_model, call):
                continue
            if _graph_made_without_grad(file_model, call):
                yield self.report(call.node)

    valid = (
        """\
import torch

w = torch.randn(3, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8)
for _ in range(100):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
        w.grad.zero_()
""",
        """\
import torch
import torch.nn.functional as F


@torch.no_grad()
def fgsm(model, x, y, eps=0.03):
    with torch.enable_grad():
        x = x.clone().requires_grad_(True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
    return (x + eps * x.grad.sign()).clamp(0, 1)
""",
        """\
import torch


def run_epoch(model, loader, optimizer, criterion, phase):
    for x, y in loader:
        with torch.set_grad_enabled(phase == "train"):
            loss = criterion(model(x), y)
            if phase == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        with torch.no_grad():
            loss = criterion(model(x), y)
            loss.backward()  # expect: TL102
        optimizer.step()
""",
        """\
import torch
import torch.nn.functional as F


@torch.inference_mode()
def finetune_step(model, x, y, optimizer):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()  # expect: TL102
    optimizer.step()
""",
    )


def _in_optimizer(file_model: FileModel, call: CallSite) -> bool:
    """An optimizer's own ``step`` runs under no_grad and calls its closure under enable_grad."""
    cls = file_model.enclosing_class(call.scope) or ""
    return call.scope.name == "step" or is_optimizer_name(cls)


def _differentiated(file_model: FileModel, call: CallSite) -> Optional[cst.BaseExpression]:
    """The expression whose graph the call walks: ``loss`` in ``loss.backward()`` / ``grad(loss, w)``."""
    if call.method == "backward" and file_model.qualify(call) is None and isinstance(call.node.func, cst.Attribute):
        return call.node.func.value
    return positional(call.node, 0)


def _graph_made_without_grad(file_model: FileModel, call: CallSite) -> bool:
    """Did a forward pass or loss feeding the differentiated tensor run with grad off?"""
    expr = _differentiated(file_model, call)
    if expr is None:
        return False
    scope = call.scope
    sources = list(calls_in_node(file_model, expr))
    paths = flow_back(set(referenced_paths(expr)), scope)
    for a in scope.assignments:
        if a.order < call.order and a.value is not None and any(
            p in paths for t in a.targets for p in bound_paths(t)
        ):
            sources.extend(calls_in_node(file_model, a.value))
    producing = [c for c in sources if _records_graph(file_model, c)]
    return bool(producing) and all(file_model.grad_at(c.site) is GradMode.NO_GRAD for c in producing)


def _records_graph(file_model: FileModel, call: CallSite) -> bool:
    return file_model.is_forward(call) or file_model.is_submodule_forward(call) or file_model.is_loss_call(call)
