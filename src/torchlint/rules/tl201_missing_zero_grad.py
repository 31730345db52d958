"""TL201: a training loop steps the optimizer but never clears gradients."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set, Tuple
from torchlint.model import FileModel
from torchlint.edits import enclosing_statement, first_statement, insert_after, insert_before, parent_map
from torchlint.model.expr import bound_paths, dotted
from torchlint.rule import Fix, Rule
from torchlint.needs import BACKWARD, STEP

if TYPE_CHECKING:
    from torchlint.edits import Statement
    from torchlint.model.records import CallSite, Loop, LoopRole
    from torchlint.rule import Finding

# Calls that take the optimizer without clearing it.
_PASSIVE = frozenset("step unscale_ update clip_grad_norm_ clip_grad_value_ state_dict".split())


def _optimizer_handed_off(file_model: FileModel, calls: List[CallSite], optimizers: Set[Optional[str]]) -> bool:
    """The optimizer goes to code we cannot see (another module), which may clear it."""
    for call in calls:
        if call.method in _PASSIVE or file_model.resolve(call) is not None:
            continue
        if any(dotted(arg.value) in optimizers for arg in call.node.args):
            return True
    return False


def _built_each_iteration(loop: Loop, optimizers: Set[Optional[str]]) -> bool:
    """A new optimizer every iteration usually comes with new leaves to optimise."""
    return any(
        loop.contains(a.order) and a.kind == "assign" and any(dotted(t) in optimizers for t in a.targets)
        for a in loop.scope.assignments
    )


def _zero_grad_fix(file_model: FileModel, loop: Loop, role: LoopRole) -> Optional[Fix]:
    """``opt.zero_grad()`` once per iteration for each optimizer the loop steps.

    At the start of the loop body when every step runs on every iteration;
    right after each step, in the same block, when a step is conditional
    (``if (i + 1) % accum == 0: opt.step()``), so the gradients accumulated
    until that step are kept. Only when every step is in the loop itself (a
    helper's optimizer may have another name here) and the optimizer is bound
    before the iteration starts.
    """
    steps = []
    for step in role.steps:
        name = file_model.stepped_optimizer(step) if loop.contains(step.order) else None
        if name is None:
            return None
        steps.append((step, name))
    optimizers = list(dict.fromkeys(name for _, name in steps))
    for a in loop.scope.assignments:
        if a.node is loop.node or not loop.contains(a.order):
            continue
        bound = [p for t in a.targets for p in bound_paths(t)]
        if any(opt == p or opt.startswith(p + ".") for opt in optimizers for p in bound):
            return None
    found = [enclosing_statement(file_model, step.node) for step, _ in steps]
    statements = [stmt for stmt in found if stmt is not None]
    if not optimizers or len(statements) < len(found):
        return None
    parents = parent_map(file_model)
    if any(parents.get(id(stmt)) is not loop.node.body for stmt in statements):
        return _clear_after_each_step(steps, statements)
    first = first_statement(loop.node.body)
    if first is None:
        return None
    calls = [f"{opt}.zero_grad()" for opt in optimizers]
    return Fix(f"call {', '.join(f'`{c}`' for c in calls)} at the start of each iteration",
               ((first, insert_before(first, *calls)),))


def _clear_after_each_step(steps: List[Tuple[CallSite, str]], statements: List[Statement]
                           ) -> Fix:
    """``opt.zero_grad()`` right after each statement that steps ``opt``."""
    clears: Dict[Statement, List[str]] = {}
    for (_, name), stmt in zip(steps, statements):
        clears.setdefault(stmt, [])
        if name not in clears[stmt]:
            clears[stmt].append(name)
    calls = [f"`{name}.zero_grad()`" for names in clears.values() for name in names]
    edits = tuple((stmt, insert_after(stmt, *(f"{name}.zero_grad()" for name in names)))
                  for stmt, names in clears.items())
    return Fix(f"call {', '.join(dict.fromkeys(calls))} right after each step", edits)


class MissingZeroGrad(Rule):
    code = "TL201"
    name = "missing-zero-grad"
    message = (
        "optimizer.step() in a training loop that never clears gradients, so they add up "
        "across iterations; call optimizer.zero_grad() once per iteration"
    )
    fix_safety = "unsafe"
    torch_programs_only = True
    needs = BACKWARD & STEP
    docs = """
## What it does
Finds training loops that call `backward()` and `optimizer.step()` (directly
or through helpers in the same module) but never clear gradients: no
`optimizer.zero_grad()`, `model.zero_grad()`, `p.grad = None` or
`p.grad.zero_()` anywhere in the loop.

## Why is this bad
`backward()` adds into `.grad`; it never overwrites it. Without clearing,
step *k* uses the sum of the gradients of all *k* iterations so far: the
effective learning rate grows with every step and training diverges or
quietly converges to something worse. Nothing raises.

Gradient accumulation, which clears every N steps (`if (i + 1) % N == 0:
optimizer.step(); optimizer.zero_grad()`), is correct and not reported;
neither are closures passed to `optimizer.step(closure)` that clear inside,
nor engines whose `step()` clears for you (DeepSpeed's `engine.step()`).

## Example
```python
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
```

## Fix safety
The fix inserts `optimizer.zero_grad()` (one call per optimizer the loop
steps) as the first statement of the loop body; where a `step()` runs only on
some iterations (`if (i + 1) % accum == 0: optimizer.step()`, gradient
accumulation), it goes right after that step, in the same branch, so the
gradients accumulated until the step are kept. It is offered only when
every `step()` is in the loop itself and the optimizer is bound before the
iteration starts. It is unsafe because it changes the numbers training
produces, on purpose: gradients a program deliberately carries into the
loop, or accumulates across iterations through code torchlint cannot see
(another module clears them every N steps), are discarded.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        training = {}
        for loop in file_model.loops():
            role = file_model.loop_role(loop)
            if role.backward and role.steps:
                training[loop] = role
        for loop, role in training.items():
            if role.clears or any(child in training for child in file_model.loop_children(loop)):
                continue
            if any(file_model.is_closure_step(s) for s in role.steps):
                continue  # step(closure): the closure owns the gradients
            optimizers = {file_model.stepped_optimizer(s) for s in role.steps}
            if _optimizer_handed_off(file_model, role.calls, optimizers) or _built_each_iteration(loop, optimizers):
                continue
            own = [s for s in role.steps if loop.contains(s.order)]
            yield self.report((own or role.steps)[0].node, fix=_zero_grad_fix(file_model, loop, role))

    valid = (
        """\
import torch


def train(model, loader, optimizer, criterion, accum_steps=4):
    for i, (x, y) in enumerate(loader):
        loss = criterion(model(x), y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
""",
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        for p in model.parameters():
            p.grad = None
        criterion(model(x), y).backward()
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()  # expect: TL201
""",
        """\
import torch

w = torch.zeros(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
x, y = torch.randn(8, 3), torch.randn(8)
for _ in range(100):
    ((x @ w - y) ** 2).mean().backward()
    opt.step()  # expect: TL201
""",
    )
