"""TL202: zero_grad() between backward() and step() throws the gradients away."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set
from torchlint.model import FileModel
from torchlint.rule import Rule
from torchlint.needs import BACKWARD, STEP, Call

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Scope
    from torchlint.rule import Finding


def _backward_in_helper(file_model: FileModel, call: CallSite) -> bool:
    """A same-module function called here that runs a backward."""
    target = file_model.resolve(call)
    return target is not None and any(file_model.is_backward(c) for c in file_model.reachable_calls(target))


class ZeroGradBeforeStep(Rule):
    code = "TL202"
    name = "zero-grad-before-step"
    message = (
        "zero_grad() runs after backward() and before optimizer.step(), so the step uses "
        "zero gradients; clear gradients before backward() or after step()"
    )
    torch_programs_only = True
    needs = Call("zero_grad") & BACKWARD & STEP
    docs = """
## What it does
Finds `zero_grad()` calls that sit, in the same iteration, after the
`backward()` that computed the gradients and before the `optimizer.step()`
that should use them.

## Why is this bad
The step then sees zero (or `None`) gradients: parameters do not move, or
only weight decay and momentum move them. The loss stays flat and nothing
raises.

Clearing a *different* model's gradients in between is correct and not
reported: a GAN calls `netG.zero_grad()` after the discriminator's backward
and before `optimizerD.step()`.

## Example
```python
loss.backward()
optimizer.zero_grad()
optimizer.step()
```

## Use instead
```python
optimizer.zero_grad()
loss.backward()
optimizer.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for scope in file_model.scopes:
            steps = [c for c in scope.calls if file_model.stepped_optimizer(c) and not file_model.is_closure_step(c)]
            if not steps:
                continue
            optimizers = {file_model.stepped_optimizer(s) for s in steps}
            zeros = [c for c in scope.calls if c.method and "zero_grad" in c.method]
            for zero in zeros:
                step = self._next_step(file_model, scope, zero, steps, optimizers, zeros)
                if step is not None and self._backward_before(file_model, scope, zero, step):
                    yield self.report(zero.node)

    @staticmethod
    def _clears(file_model: FileModel, zero: CallSite, optimizer: Optional[str], optimizers: Set[Optional[str]],
                zeros: List[CallSite]) -> bool:
        """Does this zero_grad() clear the gradients ``optimizer`` is about to use?"""
        if zero.receiver == optimizer:
            return True
        if zero.receiver is None or file_model.is_optimizer(zero.receiver):
            return False
        # model.zero_grad(): only sure when one optimizer and one model are in play.
        modules = {z.receiver for z in zeros if not file_model.is_optimizer(z.receiver)}
        return len(optimizers) == 1 and len(modules) == 1

    def _next_step(self, file_model: FileModel, scope: Scope, zero: CallSite, steps: List[CallSite],
                   optimizers: Set[Optional[str]], zeros: List[CallSite]) -> Optional[CallSite]:
        for step in steps:
            same_block = step.site.block == zero.site.block and step.site.index > zero.site.index
            if same_block and self._clears(file_model, zero, file_model.stepped_optimizer(step), optimizers, zeros):
                return step
        return None

    @staticmethod
    def _backward_before(file_model: FileModel, scope: Scope, zero: CallSite, step: CallSite) -> bool:
        """A backward earlier in this iteration, none between zero_grad and step."""
        loop = zero.site.loop
        optimizer = file_model.stepped_optimizer(step)
        found = False
        for call in scope.calls:
            if call.order >= step.order:
                break
            if call.order > zero.order and _backward_in_helper(file_model, call):
                return False  # CycleGAN: zero_grad(); self.backward_D(); step()
            if file_model.is_backward(call):
                if call.order > zero.order:
                    return False
                found = loop is None or loop.contains(call.order)
            elif call.order < zero.order and file_model.stepped_optimizer(call) == optimizer:
                found = False  # that backward was already consumed by an earlier step
        return found

    valid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
import torch


def train_step(G, D, opt_g, opt_d, real, z, bce):
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(G(z).detach()), torch.zeros(len(z), 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(G(z)), torch.ones(len(z), 1))
    g_loss.backward()
    opt_g.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.zero_grad()  # expect: TL202
        optimizer.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        model.zero_grad()  # expect: TL202
        optimizer.step()
""",
    )
