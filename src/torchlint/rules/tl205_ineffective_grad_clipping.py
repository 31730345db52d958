"""TL205: a gradient clip that runs where it cannot change what the optimizer applies."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Tuple, Union

import libcst as cst

from torchlint.edits import (
    enclosing_statement, insert_after, insert_before, lone_call_statement, parent_map, shadowed, source_of,
)
from torchlint.model import FileModel
from torchlint.model.expr import bound_paths, referenced_paths
from torchlint.model.grad_flow import (
    between, clip_kind, iteration_events, iteration_of, last_before, measures_only,
    parameters_generator_binding, rewalking_helper, spent_generator, stepped_optimizers, unconditional,
)
from torchlint.model.records import Loop
from torchlint.needs import ParametersHandedToAWalker, Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.grad_flow import GradEvent
    from torchlint.model.records import CallSite, Scope
    from torchlint.rule import Finding

_AFTER_STEP = ("gradient clipping after optimizer.step() changes gradients no step uses before they are "
               "cleared; clip after backward() and before step()")
_BEFORE_BACKWARD = ("gradient clipping before this iteration's backward() clips old or zeroed gradients, "
                    "and backward() then writes unclipped ones; clip after backward() and before step()")
_SPENT = ("gradient clipping of a stored parameters() generator, already used up by {spender}, clips "
          "nothing; store list(model.parameters()) or call model.parameters() again")
_REWALKED = ("`{helper}(...)` walks the parameters() generator it is given twice, and the second walk, which "
             "changes the gradients, sees nothing: clipping does nothing; pass list(model.parameters())")


def _after_step(file_model: FileModel, clip: CallSite, span: Union[Loop, Scope],
                events: Tuple[GradEvent, ...]) -> Optional[GradEvent]:
    """``backward(); step(); clip()``: nothing steps the clipped gradients before they are
    cleared. The step the clip should come before, or None."""
    step = last_before(file_model, events, clip, ("step",))
    if step is None or not unconditional(file_model, step.call, span):
        return None
    if between(file_model, events, step.call, clip, ("backward", "unscale")):
        return None
    if last_before(file_model, events, step.call, ("backward",)) is None:
        return None
    later = [e for e in events if e.call.order > clip.order and e.kind in ("step", "backward")]
    return step if not later and _clears_every_pass(file_model, span, events) else None


def _before_backward(file_model: FileModel, clip: CallSite, span: Union[Loop, Scope],
                     events: Tuple[GradEvent, ...]) -> Optional[GradEvent]:
    """``zero_grad(); clip(); backward(); step()``: the clip sees gradients backward() then
    replaces. The backward the clip should come after, or None."""
    if last_before(file_model, events, clip, ("backward", "step")) is not None:
        return None
    after = [e for e in events if e.call.order > clip.order and e.kind in ("backward", "step")]
    if len(after) < 2 or [e.kind for e in after[:2]] != ["backward", "step"]:
        return None
    backward, step = after[0], after[1]
    if not (unconditional(file_model, backward.call, span) and unconditional(file_model, step.call, span)):
        return None
    if isinstance(span, Loop):
        return backward if _clears_every_pass(file_model, span, events) else None
    # A function is one step: the gradients it finds are cleared only if it clears them first.
    clears_first = any(e.kind == "clear" and e.call.order < clip.order and unconditional(file_model, e.call, span)
                       for e in events)
    return backward if clears_first else None


def _clears_every_pass(file_model: FileModel, span: Union[Loop, Scope], events: Tuple[GradEvent, ...]) -> bool:
    return any(e.kind == "clear" and unconditional(file_model, e.call, span) for e in events)


def _move_fix(file_model: FileModel, clip: CallSite, anchor: CallSite, after: bool) -> Optional[Fix]:
    """Move the clip's statement to just after (or before) ``anchor``'s, in the same block,
    when nothing in between rebinds a name the clip reads."""
    clip_stmt, anchor_stmt = lone_call_statement(file_model, clip.node), enclosing_statement(file_model, anchor.node)
    if clip_stmt is None or anchor_stmt is None:
        return None
    parents = parent_map(file_model)
    if parents.get(id(clip_stmt)) is not parents.get(id(anchor_stmt)):
        return None
    read = {p.split(".", 1)[0] for p in referenced_paths(clip.node)}
    lo, hi = sorted((clip.order, anchor.order))
    for a in clip.scope.assignments:
        if lo < a.order < hi and any(p.split(".", 1)[0] in read for t in a.targets for p in bound_paths(t)):
            return None
    code = source_of(clip_stmt.with_changes(leading_lines=())).strip()
    moved = insert_after(anchor_stmt, code) if after else insert_before(anchor_stmt, code)
    where = "after the backward()" if after else "before the step"
    return Fix(f"move `{code}` {where}", ((anchor_stmt, moved), (clip_stmt, cst.RemoveFromParent())))


def _list_fix(file_model: FileModel, clip: CallSite) -> Optional[Fix]:
    """``params = list(model.parameters())``: a list every use can read."""
    binding = parameters_generator_binding(file_model, clip)
    if binding is None or binding.value is None or shadowed(binding.site.scope, "list"):
        return None  # (an assignment: it has a value)
    value = binding.value
    # ``list(p for p in ...)``: a generator expression, the only argument, needs no parentheses of its own
    inner = value.with_changes(lpar=(), rpar=()) if isinstance(value, cst.GeneratorExp) else value
    listed = cst.Call(func=cst.Name("list"), args=[cst.Arg(value=inner)])
    return Fix(f"store `list({source_of(value)})`", ((value, listed),))


class IneffectiveGradClipping(Rule):
    code = "TL205"
    name = "ineffective-grad-clipping"
    message = ("gradient clipping that cannot affect the optimizer step; clip after backward() and "
               "before optimizer.step()")
    fix_safety = "unsafe"
    torch_programs_only = True
    asked_when_parsed = True  # its check reads every call's arguments for a parameters generator
    # A clip, or a ``parameters()`` generator handed to a helper that clips by hand.
    needs = Text("clip_grad") | ParametersHandedToAWalker()

    docs = """
## What it does
Finds `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` calls (any
import spelling, the deprecated `clip_grad_norm` included) that cannot
change the update the optimizer makes:

- called after `optimizer.step()` in an iteration that clears the
  gradients before its next step;
- called before the iteration's `backward()`, when the loop clears the
  gradients every iteration: the clip sees zeros, `None` or gradients
  already used, and `backward()` then writes fresh, unclipped ones;
- given a `parameters()` generator stored in a variable
  (`params = model.parameters()`, or a one-shot iterator over one:
  `itertools.chain(enc.parameters(), dec.parameters())`,
  `filter(..., model.parameters())`, `(p for p in model.parameters() ...)`)
  that an earlier use already ran to the end: an optimizer built from it, a
  loop over it, an earlier clip, or the same clip on the loop's first
  iteration. A generator is empty the second time, and clipping an empty
  list does nothing;
- a call that hands such a generator to a clipping helper of the file or of
  another module of the project which walks it to the end (the norm) and then
  again to change the gradients (`p.grad.mul_(coef)` for each, or torch's
  clip): the second walk finds nothing to scale.

## Why is this bad
The training run is not protected from exploding gradients although the
code says it is. Nothing raises: the clip returns a norm (0.0 for an empty
generator, with a warning since torch 2.1 that is easy to miss in a log),
and the loss spikes or turns NaN on the batches the clip was meant for.

Clipping between `backward()` and `step()` is the right place and is not
reported, nor is clipping after `scaler.unscale_(optimizer)` with a
GradScaler, clipping inside a closure passed to `optimizer.step(closure)`,
gradient accumulation that clips before the accumulated step, a stored
`list(model.parameters())`, which can be read any number of times, or
`clip_grad_norm_(params, float("inf"))` after the step, which only measures
the norm for a log.

## Example
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
```

## Fix safety
The fix moves a clip that comes after the step to just before that step,
and a clip that comes before the backward to just after that backward; it
is offered only when the clip is a statement of its own in the same block
as that step or backward and nothing in between rebinds a name the clip
reads. For a spent generator it stores `list(model.parameters())` instead.
It is unsafe because it changes the numbers training produces, on purpose:
the clip starts to work, so every step that had a larger gradient norm
than `max_norm` now takes a smaller step.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for call in file_model.calls:
            kind = clip_kind(file_model, call)
            if kind is None:
                helper = rewalking_helper(file_model, call)
                if helper is not None:
                    yield self.report(call.node, _REWALKED.format(helper=helper))
                continue
            spender = spent_generator(file_model, call) if kind == "torch" else None
            if spender is not None:
                yield self.report(call.node, _SPENT.format(spender=spender), fix=_list_fix(file_model, call))
                continue
            found = self._misplaced(file_model, call)
            if found is not None:
                message, anchor, after = found
                yield self.report(call.node, message, fix=_move_fix(file_model, call, anchor.call, after))

    @staticmethod
    def _misplaced(file_model: FileModel, clip: CallSite) -> Optional[Tuple[str, GradEvent, bool]]:
        """(message, the event the clip belongs next to, whether after it), or None."""
        span = iteration_of(clip)
        if span is None or measures_only(file_model, clip):
            return None  # a norm for the log, read after the step on purpose
        events = iteration_events(file_model, span)
        if any(e.kind == "opaque" for e in events) or len(stepped_optimizers(file_model, events)) != 1:
            return None  # several optimizers, or steps we cannot see: which gradients a clip serves is unclear
        step = _after_step(file_model, clip, span, events)
        if step is not None:
            return _AFTER_STEP, step, False
        backward = _before_backward(file_model, clip, span, events)
        if backward is not None:
            return _BEFORE_BACKWARD, backward, True
        return None

    valid = (
        """\
import torch


def train(model, loader, optimizer, criterion, accum_steps=4):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
import torch


def train(model, loader, optimizer, criterion, scaler):
    for x, y in loader:
        optimizer.zero_grad()
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
from torch.nn.utils import clip_grad_norm_


def fit(model, x, y, steps):
    params = list(model.parameters())
    optimizer = torch.optim.LBFGS(params)

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        clip_grad_norm_(params, 1.0)
        return loss

    for _ in range(steps):
        optimizer.step(closure)
""",
        """\
import torch


def train(G, D, opt_g, opt_d, loader, bce):
    for real, z in loader:
        opt_d.zero_grad()
        d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(G(z).detach()), torch.zeros(len(z), 1))
        d_loss.backward()
        opt_d.step()
        torch.nn.utils.clip_grad_norm_(G.parameters(), 1.0)
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
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL205
""",
        """\
from torch import nn, optim


def train(model, loader, criterion):
    params = model.parameters()
    optimizer = optim.SGD(params, lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        nn.utils.clip_grad_value_(params, 0.5)  # expect: TL205
        optimizer.step()
""",
        """\
import torch
from torch.nn.utils import clip_grad


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        clip_grad.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL205
        criterion(model(x), y).backward()
        optimizer.step()
""",
    )
