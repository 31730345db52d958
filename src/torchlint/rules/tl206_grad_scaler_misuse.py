"""TL206: a GradScaler's scaled gradients clipped, stepped past the scaler, or never updated."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Tuple, Union

import libcst as cst

from torchlint.edits import enclosing_statement, insert_after, insert_before, lone_call_statement
from torchlint.model import FileModel
from torchlint.model.expr import dotted, identifiers, keyword, positional
from torchlint.model.grad_flow import (
    alternative_to, between, clip_kind, grad_scaler_state, iteration_events, iteration_of, measures_only, reaching,
    runs_whenever, scaler_step,
)
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.grad_flow import GradEvent
    from torchlint.model.records import CallSite, Loop, Scope
    from torchlint.rule import Finding

_CLIP = ("gradient clipping of scaled gradients: scaler.scale(loss).backward() left them multiplied by "
         "the loss scale, so max_norm is compared with norms about 65536 times too large; call "
         "scaler.unscale_(optimizer) before clipping")
_STEP = ("optimizer.step() after scaler.scale(loss).backward() applies gradients multiplied by the loss "
         "scale and skips the scaler's inf/NaN check; call scaler.step(optimizer) and scaler.update()")
_UPDATE = ("scaler.step(optimizer) in a loop without scaler.update() in the loop: the next iteration's "
           "unscale_() or step() raises RuntimeError; call scaler.update() after the step(s) of each iteration")


def _span_events(file_model: FileModel, call: CallSite) -> Tuple[Union[Loop, Scope], Tuple[GradEvent, ...]]:
    span = iteration_of(call) or call.scope
    return span, iteration_events(file_model, span)


def _scaled_and_not_unscaled(file_model: FileModel, call: CallSite,
                             events: Tuple[GradEvent, ...]) -> Optional[GradEvent]:
    """A scaled backward whose gradients ``call`` may see, with no ``unscale_`` since."""
    for backward in reaching(file_model, events, call, ("backward",)):
        if backward.scaler and not between(file_model, events, backward.call, call, ("unscale", "step", "opaque")):
            return backward
    return None


def _unscale_fix(file_model: FileModel, clip: CallSite, backward: GradEvent,
                 events: Tuple[GradEvent, ...]) -> Optional[Fix]:
    """``scaler.unscale_(optimizer)`` just before the clip, where the scaled backward always runs
    before it and one optimizer is stepped by that scaler afterwards (and not unscaled again)."""
    scaler = backward.scaler
    later = [e for e in events if e.call.order > clip.order]
    steps = [e.call for e in later if e.kind == "step" and e.scaler == scaler]
    optimizers = {file_model.stepped_optimizer(step) for step in steps}
    if len(optimizers) != 1 or any(e.kind == "unscale" for e in later):
        return None
    if not all(runs_whenever(file_model, step, clip) for step in steps):
        return None  # a clip every micro-step, a step every few: a second unscale_() before update() raises
    if not runs_whenever(file_model, backward.call, clip):
        return None  # ``if amp: scaled backward`` then a clip on both paths: unscale_ only on one
    stmt = enclosing_statement(file_model, clip.node)
    if stmt is None:
        return None
    code = f"{scaler}.unscale_({optimizers.pop()})"
    return Fix(f"call `{code}` before clipping", ((stmt, insert_before(stmt, code)),))


def _through_scaler_fix(file_model: FileModel, step: CallSite) -> Optional[Fix]:
    """``optimizer.step()`` -> ``scaler.step(optimizer)`` (and ``scaler.update()`` unless the
    iteration has one), where the scaled backward always runs before the step."""
    span, events = _span_events(file_model, step)
    backward = _scaled_and_not_unscaled(file_model, step, events)
    stmt = lone_call_statement(file_model, step.node)
    if backward is None or stmt is None or not runs_whenever(file_model, backward.call, step):
        return None
    scaler = backward.scaler
    codes = [f"{scaler}.step({step.receiver})"]
    if not any(c.method == "update" and c.receiver == scaler for c in file_model.reachable_calls(span)):
        codes.append(f"{scaler}.update()")
    replaced = stmt.with_changes(body=[stmt.body[0].with_changes(value=cst.parse_expression(codes[0]))])
    new = insert_after(replaced, *codes[1:]) if len(codes) > 1 else replaced
    return Fix(f"step through the scaler: {', '.join(f'`{c}`' for c in codes)}", ((stmt, new),))


def _update_fix(file_model: FileModel, step: CallSite, loop: Loop) -> Optional[Fix]:
    """``scaler.update()`` right after the loop's only ``scaler.step(optimizer)``."""
    stmt = lone_call_statement(file_model, step.node)
    if stmt is None or loop is not step.site.loop:
        return None
    steps = [c for c in file_model.reachable_calls(loop) if c.method == "step" and c.receiver == step.receiver]
    if len(steps) != 1:
        return None
    if any(c.method == "update" and _same_scaler(file_model, c.receiver, step.receiver) for c in step.scope.calls):
        return None  # updated outside the loop: a second update() in a row would raise
    code = f"{step.receiver}.update()"
    return Fix(f"call `{code}` after the step", ((stmt, insert_after(stmt, code)),))


def _loop_names(loop: Loop) -> set:
    return set(identifiers(loop.node.target)) if hasattr(loop.node, "target") else set()


def _same_scaler(file_model: FileModel, receiver: Optional[str], scaler: Optional[str]) -> bool:
    """``update()`` on this scaler, or on another name that may alias it (``scaler = self.scaler``)."""
    return receiver == scaler or grad_scaler_state(file_model, receiver) is not None or (
        receiver is not None and "scaler" in receiver.lower())


def _may_update_elsewhere(file_model: FileModel, call: CallSite, scaler: str) -> bool:
    """Code we cannot see that gets the scaler (or, for ``self.scaler``, is a method of self
    or of a base class)."""
    if file_model.resolve(call) is not None or file_model.qualify(call) is not None:
        return False
    func = call.node.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted(func.value.func) == "super":
        return scaler.startswith("self.")
    if any(dotted(a.value) == scaler for a in call.node.args):
        return True
    callee = call.callee or ""
    return scaler.startswith("self.") and callee.startswith("self.") and callee.count(".") == 1 \
        and grad_scaler_state(file_model, callee) is None and not _is_attribute(file_model, callee)


def _is_attribute(file_model: FileModel, path: Optional[str]) -> bool:
    """``self.model`` bound in this file: calling it runs a module, not a method that could update."""
    return any(path in map(dotted, a.targets) for a in file_model.assignments)


class GradScalerMisuse(Rule):
    code = "TL206"
    name = "grad-scaler-misuse"
    message = ("GradScaler misuse leaves gradients scaled or the scaler never updated; clip only after "
               "scaler.unscale_(optimizer), step through scaler.step(optimizer), call scaler.update() every iteration")
    fix_safety = "unsafe"
    torch_programs_only = True
    needs = Text(r"GradScaler|\.\s*scale\s*\(|unscale_")
    docs = """
## What it does
Finds three ways mixed-precision training with `torch.amp.GradScaler` (or
`torch.cuda.amp.GradScaler`, `ShardedGradScaler`) goes wrong. The scaler is
found by its construction (`scaler = GradScaler(...)`), or, where it comes
from elsewhere, by name (`scaler`, `self.grad_scaler`) together with a call
only a GradScaler has (`scale`, `unscale_`). A scaler built with
`enabled=False` is left alone: it scales by 1 and its `step()` is the
optimizer's. One built with `enabled=use_amp` counts as on: the code is
wrong whenever mixed precision is switched on.

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

## Fix safety
Each case has a fix where the code says exactly what to write: it inserts
`scaler.unscale_(optimizer)` before the clip (the scaled backward always
runs before the clip, and one optimizer is stepped by that scaler after
it); it replaces `optimizer.step()` by `scaler.step(optimizer)`, adding
`scaler.update()` after it unless the iteration has one (the scaled
backward always runs before the step); it inserts `scaler.update()` after
the loop's only `scaler.step(optimizer)`. Where the scaled backward runs on
one branch only (`if amp: scaler.scale(loss).backward()`), no fix is
offered: the inserted call would run without a scaler on the other. The
fixes are unsafe because they change the numbers training produces, on
purpose.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for call in file_model.calls:
            if clip_kind(file_model, call) == "torch" and not measures_only(file_model, call):
                span, events = _span_events(file_model, call)
                backward = _scaled_and_not_unscaled(file_model, call, events)
                if backward is not None:
                    yield self.report(call.node, _CLIP, fix=_unscale_fix(file_model, call, backward, events))
            elif self._steps_past_scaler(file_model, call):
                yield self.report(call.node, _STEP, fix=_through_scaler_fix(file_model, call))
            elif scaler_step(file_model, call):
                loop = self._loop_without_update(file_model, call)
                if loop is not None:
                    yield self.report(call.node, _UPDATE, fix=_update_fix(file_model, call, loop))

    @staticmethod
    def _steps_past_scaler(file_model: FileModel, call: CallSite) -> bool:
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
    def _loop_without_update(file_model: FileModel, step: CallSite) -> Optional[Loop]:
        """The loop that repeats ``scaler.step(opt)`` with no ``scaler.update()``, or None."""
        scaler = step.receiver
        assert scaler is not None  # scaler_step(step) named it
        loop = step.site.loop
        optimizer = positional(step.node, 0) or keyword(step.node, "optimizer")
        stepped = set(identifiers(optimizer)) if optimizer is not None else set()
        # ``for opt in optimizers: scaler.step(opt)``: one step per optimizer, updated after the loop.
        while loop is not None and _loop_names(loop) & stepped:
            loop = loop.parent
        if loop is None:
            return None
        calls = file_model.reachable_calls(loop)
        if any(c.method == "update" and _same_scaler(file_model, c.receiver, scaler) for c in calls):
            return None
        if any(_may_update_elsewhere(file_model, c, scaler) for c in calls):
            return None
        return loop

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
