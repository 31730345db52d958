"""TL301: a tensor that carries a graph is kept across iterations."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, Optional, Tuple, Union

import libcst as cst

from torchlint.edits import method_call, source_of
from torchlint.model import FileModel, Loop
from torchlint.model.backprop import consumed_by_backward
from torchlint.model.expr import bound_paths, dotted
from torchlint.model.module_state import graph_kept_in_module_state
from torchlint.model.stores import self_sum, stores
from torchlint.model.vocab import STORE_SPELLING, is_eval_function_name
from torchlint.needs import TRAINING_STEP, ForwardAddsToSelf, StoresInAnIteration, Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.rule import Finding

_RESETS = frozenset(("clear",))


class StoredLoss(Rule):
    code = "TL301"
    name = "graph-kept-across-iterations"
    message = (
        "tensor that carries an autograd graph is kept across iterations, so every "
        "iteration's graph stays in memory; store loss.item() or loss.detach()"
    )
    fix_safety = "unsafe"
    torch_programs_only = True
    asked_when_parsed = True  # its check costs more than its question where that says no
    # A store (``xs.append(v)``, ``total += v``, ``d[k] = v``) in an iteration: a loop of code that
    # trains, of a function named like evaluation or over loader-named data; Lightning's
    # training step; or a forward call, once per step (a criterion adding its losses to its state).
    needs = Text(STORE_SPELLING) & (StoresInAnIteration() | TRAINING_STEP | ForwardAddsToSelf())

    docs = """
## What it does
Finds tensors that carry an autograd graph (losses, model outputs and values
computed from them outside `no_grad`) that a training or evaluation loop
keeps beyond the iteration that made them: appended to a list created before
the loop (`losses.append(loss)`), accumulated into a variable that outlives
the iteration (`total_loss += loss`), or stored in a dict under a changing
key. Lightning's `training_step` counts as one iteration, and so does one
call of a module's `forward`: a criterion that adds the loss it computes to
its own state (`self.losses["cls"] += loss_cls`, `self.total = self.total +
loss`, `self.history.append(loss)`, or a method or meter of its own that sums
or appends the loss it is handed, reported at that call) keeps every training
step's graph as surely as `total_loss += loss` in the loop. The class must be a
criterion (named as a loss, or a `_Loss` subclass) or what it keeps must be
named as a loss: a module that logs its inputs or outputs for inspection
(`self.call_args.append(x)`, `self.log_scalings.append(scalings)` behind a
debug flag) keeps them on purpose.

## Why is this bad
A tensor with a `grad_fn` keeps its whole graph reachable. Kept across
iterations, each iteration adds a graph that is never freed, and memory grows
linearly until the run fails with out-of-memory, often hours in. Which memory
depends on whether `backward()` ran through the graph:

- outputs and metrics nothing backpropagates (evaluation without `no_grad`
  above all) keep every saved activation on the device: a few dozen kept
  batches fill any GPU;
- a training loss kept after `backward()` holds no device memory, because
  `backward()` freed the tensors its graph saved; its autograd nodes and the
  loss scalar grow host memory with every step.

The Evidence section below measures both, in the fixture and at scale.

Not reported: `.item()`, `.detach()`, `float()` and `.tolist()` values,
also when a same-module helper returns them (`losses.append(train_step(...))`
where `train_step` returns `loss.item()`); comparisons such as
`(pred == y).sum()`; gradients from `torch.autograd.grad` without
`create_graph=True` (with it they carry a graph and are reported); losses
summed within one iteration and backpropagated in it; containers and
accumulators that a later `backward()` consumes, in the same function or in
a same-module helper they are handed to (an RL list of log-probabilities
summed once per episode, gradient accumulation by summing losses:
`total += loss` ... `(total / n).backward()`, `sum(losses).backward()`,
`torch.stack(losses).sum().backward()`). In a module's `forward`, also:
sums computed under `no_grad` (a buffer's running statistics), a metric whose
`update` runs under `no_grad`, plain assignment (`self.last_loss = loss`
replaces, keeping one graph at most), and state the same call resets
(`self.losses = {}` at the top of `forward`, `.clear()`), which holds only the
graph the caller backpropagates anyway.

## Example
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss)
```

## Use instead
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
```

## Fix safety
The fix stores `value.detach()` instead of `value` (for `total += loss`,
`total += loss.detach()`): the same tensor, with the same type, device and
numbers, cut from its graph, so code that later calls `.item()`, `torch.stack`
or `.mean()` on what was stored keeps working. (`.item()` would also free the
graph, but it turns tensors into floats, which breaks such code, fails on
tensors with more than one element, and makes every iteration wait for the
GPU; write it by hand where a float is what you want.) It is unsafe because
a stored value then no longer requires grad: if code torchlint cannot see
(another method, another module) backpropagates through it, as a
reinforcement-learning update over stored log-probabilities does, that
backward raises or those terms silently stop contributing gradients. No fix
is offered for `extend(...)` or for literals such as tuples.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for scope in file_model.scopes:
            hook = scope.class_name is not None and scope.name == "training_step"
            if not scope.loops and not hook or file_model.part_of_forward(scope):
                continue
            context = _ScopeContext(file_model, scope, hook)
            for store in stores(scope):
                loop = context.iteration(store.order, store.container)
                if loop is None or not file_model.taint(scope).carries_graph(store.value, store.order):
                    continue
                container = store.container
                if container in context.backprop or not context.outlives(container, loop):
                    continue
                if context.handed_to_caller(container, loop):
                    continue
                yield self.report(store.node, fix=_detach_fix(store.node, container, store.value))
        for kept in graph_kept_in_module_state(file_model):  # a criterion's forward: one iteration per call
            yield self.report(kept.node, fix=_detach_fix(kept.node, kept.container, kept.value))

    valid = (
        """\
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self, log=False):
        super().__init__()
        self.proj = nn.Linear(8, 4)
        self.log = log
        self.logged = []

    def forward(self, x):
        scalings = self.proj(x).softmax(-1)
        if self.log:
            self.logged.append(scalings)  # a debug log of outputs, kept on purpose
        return scalings
""",
        """\
import torch


def reinforce(policy, env, optimizer, episodes, gamma=0.99):
    for episode in range(episodes):
        log_probs, rewards, done = [], [], False
        state = env.reset()
        while not done:
            dist = torch.distributions.Categorical(logits=policy(state))
            action = dist.sample()
            log_probs.append(dist.log_prob(action))
            state, reward, done = env.step(action.item())
            rewards.append(reward)
        loss = -(torch.stack(log_probs) * torch.tensor(rewards)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion, accum_steps=4):
    total = 0
    for i, (x, y) in enumerate(loader):
        total = total + criterion(model(x), y)
        if (i + 1) % accum_steps == 0:
            optimizer.zero_grad()
            (total / accum_steps).backward()
            optimizer.step()
            total = 0
""",
        """\
import torch


def train(model, loader, optimizer, criterion):
    running, history = 0.0, []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss.item()
        history.append(loss.detach())
    return running, history
""",
        """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class DetectionLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(()))
        self.history = []

    def forward(self, pred, target):
        self.losses = {"cls": 0.0, "box": 0.0}
        self.losses["cls"] += F.cross_entropy(pred[0], target[0])
        self.losses["box"] += F.smooth_l1_loss(pred[1], target[1])
        loss = self.losses["cls"] + self.losses["box"]
        self.history.append(loss.item())
        self.last_loss = loss
        with torch.no_grad():
            self.running.mul_(0.99).add_(0.01 * loss)
            self.running += 0.0 * loss
        return loss
""",
        """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MeanMetric(nn.Module):
    def __init__(self):
        super().__init__()
        self.total, self.count = 0.0, 0

    @torch.no_grad()
    def update(self, value):
        self.total += value
        self.count += 1


class Criterion(nn.Module):
    def __init__(self):
        super().__init__()
        self.meter = MeanMetric()
        self.running_mean = 0.0

    def forward(self, logits, target):
        loss = F.cross_entropy(logits, target)
        self.meter.update(loss)
        self.running_mean = 0.9 * self.running_mean + 0.1 * loss.detach()
        return loss
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)  # expect: TL301
    return losses
""",
        """\
import torch


def train(model, loader, optimizer, criterion):
    total_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += loss  # expect: TL301
    return total_loss / len(loader)
""",
        """\
import torch.nn as nn
import torch.nn.functional as F


class MultiLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.losses = {"cls": 0.0, "box": 0.0}

    def forward(self, pred, target):
        loss_cls = F.cross_entropy(pred[0], target[0])
        loss_box = F.smooth_l1_loss(pred[1], target[1])
        self.losses["cls"] += loss_cls  # expect: TL301
        self.losses["box"] += loss_box  # expect: TL301
        return loss_cls + loss_box
""",
        """\
import torch.nn as nn
import torch.nn.functional as F


class TrackedLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.history = []
        self.total = 0.0

    def forward(self, logits, target):
        loss = F.cross_entropy(logits, target)
        self.history.append(loss)  # expect: TL301
        self._track(loss)  # expect: TL301
        return loss

    def _track(self, value):
        self.total = self.total + value
""",
    )


# Values that are not one tensor: ``.detach()`` on them would raise.
_NOT_A_TENSOR = (
    cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
    cst.BaseNumber, cst.BaseString, cst.Lambda, cst.StarredElement,
)


def _detach_fix(node: cst.CSTNode, container: str, value: cst.BaseExpression) -> Optional[Fix]:
    """Store ``value.detach()``: the same tensor (type, device, value), without its graph.

    For ``total = total + loss`` only the added value is detached; ``extend``
    (an iterable of tensors) and literals get no fix.
    """
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "extend":
        return None
    if isinstance(node, cst.Assign) and isinstance(value, cst.BinaryOperation) and container in (
        dotted(value.left), dotted(value.right)
    ):
        value = value.right if dotted(value.left) == container else value.left
    if isinstance(value, _NOT_A_TENSOR):
        return None
    code = source_of(value)
    return Fix(f"store `{code}.detach()` instead of `{code}`", ((value, method_call(value, "detach")),))


class _ScopeContext:
    """Facts about one scope that every store in it shares, computed on demand."""

    def __init__(self, file_model: FileModel, scope: Scope, hook: bool) -> None:
        self.file_model = file_model
        self.scope = scope
        self.hook = hook
        self._iteration: Dict[Loop, bool] = {}
        self._backprop: Optional[frozenset] = None
        self._outlives: Dict[Tuple[str, int], bool] = {}  # (container, loop): a loop of 10,000 appends asks once

    @property
    def backprop(self) -> frozenset:
        if self._backprop is None:
            self._backprop = consumed_by_backward(self.file_model, self.scope)
        return self._backprop

    def is_iteration(self, loop: Loop) -> bool:
        if loop not in self._iteration:
            file_model = self.file_model
            role = file_model.loop_role(loop)
            evaluates = is_eval_function_name(self.scope.name) and any(file_model.is_forward(c) for c in role.calls)
            self._iteration[loop] = role.trains or role.data or evaluates
        return self._iteration[loop]

    def iteration(self, order: int, container: str) -> Union[Loop, Scope, None]:
        """The innermost iteration loop around ``order``: it decides what "per iteration" means.

        Lightning's ``training_step`` is one iteration of a loop we cannot see.
        """
        inner = None
        for loop in self.scope.loops:
            if loop.contains(order) and self.is_iteration(loop):
                if inner is None or loop.start > inner.start:
                    inner = loop
        if inner is None and self.hook and container.startswith("self."):
            return self.scope
        return inner

    def outlives(self, container: str, loop: Union[Loop, Scope]) -> bool:
        """Is ``container`` bound outside ``loop`` and never reset inside it?"""
        key = (container, id(loop))
        if key not in self._outlives:
            self._outlives[key] = self._outlives_uncached(container, loop)
        return self._outlives[key]

    def _outlives_uncached(self, container: str, loop: Union[Loop, Scope]) -> bool:
        for a in self.scope.assignments:
            if not loop.contains(a.order) or a.kind == "aug" or self_sum(a, container):
                continue  # adding to the container is not resetting it
            for t in a.targets:
                if a.kind == "del":  # del losses[:]
                    if isinstance(t, cst.Subscript) and dotted(t.value) == container:
                        return False
                    continue
                for bound in bound_paths(t):
                    if container == bound or container.startswith(bound + "."):
                        return False
        for call in self.scope.calls:
            if loop.contains(call.order) and call.receiver == container and call.method in _RESETS:
                return False
        return True

    def handed_to_caller(self, container: str, loop: Union[Loop, Scope]) -> bool:
        """Micro-batching: chunks gathered in a loop that does not train, then returned.

        ``total += loss; return total`` or ``outs.append(enc(c)); return cat(outs)``:
        the caller owns that graph and may backpropagate it.
        """
        if loop is self.scope or (isinstance(loop, Loop) and self.file_model.loop_role(loop).trains):
            return False
        if is_eval_function_name(self.scope.name):
            return False
        return container in self.file_model.returned_paths(self.scope)
