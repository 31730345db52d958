"""TL206: a GradScaler's scaled gradients clipped, stepped past the scaler, or never updated."""
from __future__ import annotations

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.expr import dotted, identifiers, positional
from torchlint.model.grad_flow import (
    alternative_to, between, clip_kind, measures_only, grad_scaler_state, iteration_events, iteration_of, reaching, scaler_step,
)
from torchlint.rule import Rule

_CLIP = ("gradient clipping of scaled gradients: scaler.scale(loss).backward() left them multiplied by "
         "the loss scale, so max_norm is compared with norms about 65536 times too large; call "
         "scaler.unscale_(optimizer) before clipping")
_STEP = ("optimizer.step() after scaler.scale(loss).backward() applies gradients multiplied by the loss "
         "scale and skips the scaler's inf/NaN check; call scaler.step(optimizer) and scaler.update()")
_UPDATE = ("scaler.step(optimizer) in a loop without scaler.update() in the loop: the next iteration's "
           "unscale_() or step() raises RuntimeError; call scaler.update() after the step(s) of each iteration")


def _span_events(file_model: FileModel, call):
    span = iteration_of(call) or call.scope
    return span, iteration_events(file_model, span)


def _scaled_and_not_unscaled(file_model: FileModel, call, events):
    """A scaled backward whose gradients ``call`` may see, with no ``unscale_`` since."""
    for backward in reaching(file_model, events, call, ("backward",)):
        if backward.scaler and not between(file_model, events, backward.call, call, ("unscale", "step", "opaque")):
            return backward
    return None


def _loop_names(loop) -> set:
    return set(identifiers(loop.node.target)) if hasattr(loop.node, "target") else set()


def _same_scaler(file_model: FileModel, receiver, scaler: str) -> bool:
    """``update()`` on this scaler, or on another name that may alias it (``scaler = self.scaler``)."""
    return receiver == scaler or grad_scaler_state(file_model, receiver) is not None or (
        receiver is not None and "scaler" in receiver.lower())


def _may_update_elsewhere(file_model: FileModel, call, scaler: str) -> bool:
    """Code we cannot see that gets the scaler (or, for ``self.scaler``, is a method of self
    or of a base class)."""
    if file_model.resolve(call) is not None or file_model.qualify(call) is not None:
        return False
    func = call.node.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted(func.value.func) == "super":
        return scaler.startswith("self.")
    if any(dotted(a.value) == scaler for a in call.node.args):
        return True
    return scaler.startswith("self.") and (call.callee or "").startswith("self.") and call.callee.count(".") == 1 \
        and grad_scaler_state(file_model, call.callee) is None and not _is_attribute(file_model, call.callee)


def _is_attribute(file_model: FileModel, path: str) -> bool:
    """``self.model`` bound in this file: calling it runs a module, not a method that could update."""
    return any(path in map(dotted, a.targets) for a in file_model.assignments)


class GradScalerMisuse(Rule):
    code = "TL206"
    name = "grad-scaler-misuse"
    message = ("GradScaler used so that gradients stay scaled or the scaler stops; clip only after "
               "scaler.unscale_(optimizer), step through scaler.step(optimizer), call scaler.update() every iteration")
    gate = (r"GradScaler|\.\s*scale\s*\(|unscale_",)
    docs = """
## What it does
Finds three ways mixed-precision training with `torch.amp.GradScaler` (or
`torch.cuda.amp.GradScaler`, `ShardedGradScaler`) goes wrong. The scaler is
found by its construction (`scaler = GradScaler(...)`), or, where it comes
from elsewhere, by name (`scaler`, `self.grad_scaler`) together with a call
only a GradScaler has (`scale`, `unscale_`). A scaler built with
`enabled=False` is left alone: it scales by 1 and its `step()` is the
optimizer's.

1. **clip before unscale**: `clip_grad_norm_` / `clip_grad_value_` after
   `scaler.scale(loss).backward()` with no `scaler.unscale_(optimizer)` in
   between;
2. **step past the scaler**: `optimizer.step()` called directly in an
   iteration whose backward was `scaler.scale(loss).backward()`;
3. **no update**: `scaler.step(optimizer)` in a loop that never calls
   `scaler.update()`.

## Why is this bad
`scaler.scale(loss)` multiplies the loss, and so every gradient, by the
loss scale (65536 at the start). Until `scaler.unscale_(optimizer)` or
`scaler.step(optimizer)` divides them back:

1. a clip compares `max_norm` with a norm 65536 times too large and scales
   the gradients down to `max_norm` *in scaled units*; after the step
   unscales them, the update is about 65536 times smaller than intended, on
   every step. Training crawls and nothing raises;
2. the optimizer applies the scaled gradients: with SGD the step is 65536
   times too large and the weights blow up; Adam divides most of the scale
   away, but every optimizer misses the inf/NaN check, so an overflowing
   float16 step writes NaN into the weights instead of being skipped;
3. a GradScaler refuses to unscale or step an optimizer twice without
   `scaler.update()` in between: the second iteration raises
   `RuntimeError: unscale_() is being called after step()` (or `step() has
   already been called since the last update()`). Cheap to find by
   running, unless the loop is reached only after hours of other work;
   cheaper to find here.

The canonical loop is not reported (`scaler.scale(loss).backward()`,
`scaler.unscale_(optimizer)`, clip, `scaler.step(optimizer)`,
`scaler.update()`), nor several optimizers each stepped by the scaler
before one `scaler.update()`, nor `scaler.update()` after an inner
gradient-accumulation loop, nor `if use_amp: ... else: optimizer.step()`
choosing between the scaled and the plain path.

## Example
```python
scaler.scale(loss).backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
scaler.update()
```

## Use instead
```python
scaler.scale(loss).backward()
scaler.unscale_(optimizer)
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
scaler.step(optimizer)
scaler.update()
```
"""

    def check(self, file_model: FileModel):
        if not file_model.is_torch_code:
            return
        for call in file_model.calls:
            if clip_kind(file_model, call) == "torch" and not measures_only(file_model, call) \
                and self._clips_scaled(file_model, call):
                yield self.report(call.node, _CLIP)
            elif self._steps_past_scaler(file_model, call):
                yield self.report(call.node, _STEP)
            elif scaler_step(file_model, call) and self._never_updated(file_model, call):
                yield self.report(call.node, _UPDATE)

    @staticmethod
    def _clips_scaled(file_model: FileModel, clip) -> bool:
        _, events = _span_events(file_model, clip)
        return _scaled_and_not_unscaled(file_model, clip, events) is not None

    @staticmethod
    def _steps_past_scaler(file_model: FileModel, call) -> bool:
        optimizer = file_model.stepped_optimizer(call)
        if optimizer is None or optimizer != call.receiver or file_model.is_closure_step(call):
            return False
        if any(name == "step" for _, name in file_model.methods):
            return False  # an optimizer wrapper of this file may step through the scaler itself
        _, events = _span_events(file_model, call)
        backward = _scaled_and_not_unscaled(file_model, call, events)
        if backward is None:
            return False
        # ``if amp: scaler.step(opt) else: opt.step()``: a choice on a condition we may not read.
        scaler_steps = [e.call for e in events if e.kind == "step" and e.scaler]
        return not alternative_to(file_model, call, scaler_steps)

    @staticmethod
    def _never_updated(file_model: FileModel, step) -> bool:
        scaler = step.receiver
        loop = step.site.loop
        stepped = set(identifiers(positional(step.node, 0)))
        # ``for opt in optimizers: scaler.step(opt)``: one step per optimizer, updated after the loop.
        while loop is not None and _loop_names(loop) & stepped:
            loop = loop.parent
        if loop is None:
            return False
        calls = file_model.reachable_calls(loop)
        if any(c.method == "update" and _same_scaler(file_model, c.receiver, scaler) for c in calls):
            return False
        return not any(_may_update_elsewhere(file_model, c, scaler) for c in calls)

    valid = (
        """\
import torch


def train(model, loader, optimizer, criterion, epochs):
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = criterion(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
""",
        """\
import torch


def train(model, loader, optimizer, criterion, use_amp):
    scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", enabled=use_amp):
            loss = criterion(model(x), y)
        if use_amp:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if use_amp:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
""",
        """\
import torch


def train(G, D, opt_g, opt_d, loader, g_loss_fn, d_loss_fn, accum=4):
    scaler = torch.amp.GradScaler()
    for batch in loader:
        for micro in batch.chunk(accum):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = g_loss_fn(G, D, micro) + d_loss_fn(G, D, micro)
            scaler.scale(loss / accum).backward()
        for opt in (opt_g, opt_d):
            scaler.step(opt)
        scaler.update()
        opt_g.zero_grad()
        opt_d.zero_grad()
""",
        """\
import torch

scaler = torch.amp.GradScaler(enabled=False)


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        scaler.scale(criterion(model(x), y)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    scaler = torch.amp.GradScaler()
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL206
        scaler.step(optimizer)
        scaler.update()
""",
        """\
import torch
from torch.cuda.amp import GradScaler


def train(model, loader, optimizer, criterion):
    scaler = GradScaler()
    for x, y in loader:
        optimizer.zero_grad()
        scaler.scale(criterion(model(x), y)).backward()
        optimizer.step()  # expect: TL206
""",
        """\
import torch


def train(model, loader, optimizer, criterion, scaler):
    for x, y in loader:
        optimizer.zero_grad()
        scaler.scale(criterion(model(x), y)).backward()
        scaler.step(optimizer)  # expect: TL206
""",
    )
