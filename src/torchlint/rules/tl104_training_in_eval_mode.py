"""TL104: a loop trains a model that its evaluation left in eval mode."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional
from torchlint.model import FileModel, GradMode, Span
from torchlint.model.expr import identifiers, referenced_paths
from torchlint.model.mode_effects import mode_free_model
from torchlint.model.modes import (
    TRAIN_WORDS, frozen_model, is_mode_helper, model_key, mode_switches, passes_model, same_model,
    switched_back_through_a_helper,
)
from torchlint.model.vocab import (
    is_eval_data_name, is_eval_function_name, is_eval_loader_name, last_name, tokens,
)
from torchlint.rule import Rule
from torchlint.needs import BACKWARD, STEP, Text
from torchlint.text_gate import EVAL_SWITCH_CALL

if TYPE_CHECKING:
    import libcst as cst

    from torchlint.model.modes import ModeSwitch
    from torchlint.model.records import CallSite, Loop
    from torchlint.rule import Finding

# Models that are put in eval mode on purpose and never trained by the loop.
_FROZEN_WORDS = frozenset(
    "teacher target ema frozen ref reference old momentum shadow avg averaged swa pretrained".split()
)

_BUILTINS = frozenset("print len isinstance getattr hasattr setattr type id str repr format".split())


class TrainingInEvalMode(Rule):
    code = "TL104"
    name = "training-in-eval-mode"
    message = (
        "model is switched to eval mode in a training loop and never back, so later iterations "
        "train with dropout off and frozen batch-norm statistics; call model.train() before training"
    )
    torch_programs_only = True
    needs = Text(EVAL_SWITCH_CALL) & (BACKWARD | STEP)
    docs = """
## What it does
Finds loops that train a model (`backward()` or `optimizer.step()`, in the
loop or in same-module helpers it calls) and, somewhere in the same
iteration, put that model in eval mode for evaluation, with no
`model.train()` anywhere in the iteration. Evaluation is an `eval()` (or
`model.train(False)`) in a function named like `validate`/`evaluate`/`test`,
or followed by a forward pass that evaluates: without grad, over evaluation
data (`model(x_val)`, a loop over `val_loader`) or with no backward after it
in the iteration; or a bare `model.eval()` in the loop's body that nothing
runs the model after. The finding is on the call in the loop that leads to
the `eval()`: typically `validate(model, val_loader)`.

## Why is this bad
`eval()` is a mode, not a scope: it stays until `train()` is called. From
the second epoch on, the model trains with dropout disabled and batch-norm
using (and no longer updating) its running statistics. Nothing fails; the
model just trains worse, and the first epoch looks fine.

Not reported: loops that call `model.train()` (or `model.train(flag)`)
anywhere in the iteration, including at the top of a `train_one_epoch`
helper or in a helper handed the model under another name
(`back_to_training(net)` with `def back_to_training(m): m.train()`); models put in eval mode on purpose while others train (a teacher,
an EMA or target network, frozen batch-norm during fine-tuning, where the
next forward pass of the model records a graph); models that training code
itself puts in eval mode before running them with grad (a frozen backbone
under a linear probe: evaluation leaving it in eval mode changes nothing);
`self.train()` that runs the module's own `train(mode)` override (one that
keeps frozen batch-norm in eval mode); models whose parameters the file
freezes (`backbone.requires_grad_(False)`, `p.requires_grad = False` over
`backbone.parameters()`); an `eval()` under an `if` in the loop (it may end
the training: the last epoch); helpers from other modules that are handed
the model (they may call `train()`); evaluation after the training loop; and
models that eval mode does not change: every model the file binds to that
name (or passes for that parameter) is built in the file from layers without
dropout or batch-norm (`nn.Sequential(nn.Linear(...), nn.ReLU(), ...)`), as
TL103 reads them.

## Example
```python
for epoch in range(epochs):
    train_one_epoch(model, train_loader, optimizer)   # no model.train() inside
    validate(model, val_loader)                        # calls model.eval()
```

## Use instead
```python
for epoch in range(epochs):
    model.train()
    train_one_epoch(model, train_loader, optimizer)
    validate(model, val_loader)
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        reported = set()
        for scope in file_model.scopes:
            for loop in scope.loops:
                role = file_model.loop_role(loop)
                if not role.trains:
                    continue
                for switch in _forgotten_evals(file_model, loop, role.calls):
                    node = _entry(file_model, loop, switch)
                    if id(node) not in reported:
                        reported.add(id(node))
                        yield self.report(node)

    valid = (
        """\
import torch


def back_to_training(m):
    m.train()


def fit(net, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        net.eval()
        with torch.no_grad():
            for x, y in val_loader:
                net(x)
        back_to_training(net)
        for x, y in loader:
            optimizer.zero_grad()
            net(x).sum().backward()
            optimizer.step()
""",
        """\
import torch


def validate(model, val_loader):
    model.eval()
    with torch.no_grad():
        return sum(model(x).sum().item() for x in val_loader)


def fit(model, loader, val_loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        validate(model, val_loader)
""",
        """\
import torch


def fit(model, loader, val_batch, optimizer, criterion, steps):
    for step, (x, y) in zip(range(steps), loader):
        model.train()
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        if step % 100 == 0:
            model.eval()
            with torch.no_grad():
                print(criterion(model(val_batch[0]), val_batch[1]).item())
""",
        """\
def set_mode(model, training):
    model.train(training)


def fit(model, loader, x_val, y_val, optimizer, criterion, epochs):
    for epoch in range(epochs):
        set_mode(model, True)
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()
        print(criterion(model(x_val), y_val).item())
""",
        """\
def fit(backbone, head, loader, optimizer, criterion, epochs):
    backbone.requires_grad_(False)
    head.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(head(backbone(x)), y).backward()
            optimizer.step()
        backbone.eval()
        if epoch == epochs - 1:
            head.eval()
""",
        """\
import torch
from torch import nn


def train_step(model, loader, criterion, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def test_step(model, loader, criterion):
    model.eval()
    with torch.inference_mode():
        return sum(criterion(model(x), y).item() for x, y in loader)


model_1 = nn.Sequential(nn.Flatten(), nn.Linear(784, 10), nn.ReLU(), nn.Linear(10, 10))
model_1 = model_1.to("cpu")
optimizer = torch.optim.SGD(model_1.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
for epoch in range(3):
    train_step(model=model_1, loader=train_loader, criterion=criterion, optimizer=optimizer)
    print(test_step(model=model_1, loader=test_loader, criterion=criterion))
""",
    )
    invalid = (
        """\
import torch


def validate(model, val_loader):
    model.eval()
    with torch.no_grad():
        return sum(model(x).sum().item() for x in val_loader)


def fit(model, loader, val_loader, optimizer, criterion, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        validate(model, val_loader)  # expect: TL104
""",
        """\
import torch


def fit(model, loader, val_batch, optimizer, criterion, steps):
    model.train()
    for step, (x, y) in zip(range(steps), loader):
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        if step % 100 == 0:
            model.eval()  # expect: TL104
            with torch.no_grad():
                print(criterion(model(val_batch[0]), val_batch[1]).item())
""",
        """\
def fit(model, loader, val_loader, optimizer, criterion, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()  # expect: TL104
        correct = 0
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
        print(epoch, correct)
""",
        """\
def fit(model, loader, optimizer, criterion, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        model.eval()  # expect: TL104
""",
    )


def _forgotten_evals(file_model: FileModel, loop: Loop, calls: List[CallSite]) -> Iterator[ModeSwitch]:
    switches = mode_switches(file_model, calls)
    for switch in switches:
        target = switch.receiver
        if switch.to_eval is not True or _FROZEN_WORDS & set(tokens(model_key(target))):
            continue
        if any(s.to_eval is not True and (same_model(s.receiver, target)
                                          or switched_back_through_a_helper(file_model, calls, s, target))
               for s in switches):
            continue  # train() comes back somewhere in the iteration
        if any(_may_restore(file_model, c, target) for c in calls):
            continue
        if _kept_in_eval_for_training(file_model, target) or frozen_model(file_model, target):
            continue
        if mode_free_model(file_model, target):
            continue  # no dropout or batch-norm: training in eval mode computes the same
        if _trains(file_model, calls, target) and _for_evaluation(file_model, switch, target, loop):
            yield switch


def _kept_in_eval_for_training(file_model: FileModel, target: str) -> bool:
    """Does training code put ``target`` in eval mode on purpose (a frozen backbone under a
    linear probe, frozen batch-norm) and then run it with grad in a function that backpropagates?
    Then eval mode is what its training wants, and evaluation leaving it there changes nothing."""
    for switch in mode_switches(file_model, file_model.calls):
        if switch.to_eval is not True or not same_model(switch.receiver, target):
            continue
        scope = switch.call.scope
        if not any(file_model.is_backward(c) for c in file_model.reachable_calls(scope)):
            continue
        for call in scope.calls:
            ran = _forward_of(file_model, call) if call.order > switch.order else None
            if ran is not None and same_model(ran, target):
                if not _evaluating_forward(file_model, call):
                    return True
                break
    return False


def _may_restore(file_model: FileModel, call: CallSite, target: str) -> bool:
    """A helper we cannot read that gets the model, or one named for switching modes.

    Same-module helpers are not guessed at: the loop's calls include theirs.
    """
    if file_model.resolve(call) is not None or file_model.qualify(call) is not None or call.callee in _BUILTINS:
        return False
    if is_mode_helper(call, TRAIN_WORDS) and (call.receiver is None or same_model(call.receiver, target)):
        return True
    return passes_model(call, target)


def _forward_of(file_model: FileModel, call: CallSite) -> Optional[str]:
    if file_model.is_forward(call):
        return file_model.forward_target(call)
    if file_model.is_submodule_forward(call):
        return call.receiver
    return None


def _trains(file_model: FileModel, calls: List[CallSite], target: str) -> bool:
    """A forward pass of ``target`` that records a graph, in a function that backpropagates."""
    for call in calls:
        ran = _forward_of(file_model, call)
        if ran is None or not same_model(ran, target) or file_model.grad_at(call.site) is not GradMode.GRAD:
            continue
        if any(file_model.is_backward(c) or file_model.is_loss_call(c) for c in call.scope.calls):
            return True
    return False


def _for_evaluation(file_model: FileModel, switch: ModeSwitch, target: str, loop: Loop) -> bool:
    """Is this eval() for evaluating, not for freezing batch-norm while training?

    It is in an evaluation function; or the model's next forward pass in the
    same function evaluates (without grad, over evaluation data, or with no
    backward after it in the iteration); or an evaluation helper is called
    next; or, in the loop's own body, nothing runs the model after it (a bare
    ``model.eval()`` at the end of the epoch: the next epoch trains in it).
    """
    scope = switch.call.scope
    if is_eval_function_name(scope.name):
        return True
    for call in scope.calls:
        if call.order <= switch.order:
            continue
        ran = _forward_of(file_model, call)
        if ran is not None and same_model(ran, target):
            return _evaluating_forward(file_model, call, loop, _trains_first(file_model, loop, switch))
        helper = file_model.resolve(call)
        if helper is not None and is_eval_function_name(helper.name):
            return True
    # Directly in the loop's body: under an ``if`` it may end the training (the last epoch).
    bare = scope is loop.scope and switch.call.site.block == id(loop.node.body)
    return bare and not _runs_a_model_after(file_model, switch, loop)


def _evaluating_forward(file_model: FileModel, call: CallSite, loop: Optional[Loop] = None,
                        trained_first: bool = True) -> bool:
    """A forward that evaluates: without grad, over evaluation data or an evaluation loader,
    or, when the iteration trained before the switch (``trained_first``), with nothing after
    it in the iteration that backpropagates (frozen batch-norm puts ``eval()`` before the
    training forward instead). The iteration is that of ``loop`` (the training loop) or else
    of the outermost loop around the call."""
    if file_model.grad_at(call.site) is not GradMode.GRAD:
        return True
    if any(is_eval_data_name(last_name(p)) for arg in call.node.args for p in referenced_paths(arg.value)):
        return True
    inner = outer = call.site.loop
    while inner is not None and inner is not loop:
        if inner.iter is not None and any(is_eval_loader_name(n) for n in identifiers(inner.iter)):
            return True
        outer, inner = inner, inner.parent
    if not trained_first:
        return False
    if loop is None or not (call.scope is loop.scope and loop.contains(call.order)):
        loop = outer if loop is None else None
    end = loop.end if loop is not None else call.scope.end
    after = file_model.reachable_calls(Span(call.order + 1, end))
    return not any(map(file_model.is_training_call, after))


def _trains_first(file_model: FileModel, loop: Loop, switch: ModeSwitch) -> bool:
    """Does the iteration backpropagate or step before it reaches ``switch``?"""
    order = switch.order
    if switch.call.scope is not loop.scope:
        entry = file_model.call_of(_entry(file_model, loop, switch))
        order = entry.order if entry is not None else loop.end
    return any(map(file_model.is_training_call, file_model.reachable_calls(Span(loop.start, order))))


def _runs_a_model_after(file_model: FileModel, switch: ModeSwitch, loop: Loop) -> bool:
    """Does the iteration, after ``switch``, run any forward pass (here or in a helper)?"""
    after = file_model.reachable_calls(Span(switch.order + 1, loop.end))
    return any(_forward_of(file_model, c) is not None for c in after)


def _entry(file_model: FileModel, loop: Loop, switch: ModeSwitch) -> cst.Call:
    """The call in the loop's own code that leads to the eval(): itself, or the helper call."""
    if switch.call.scope is loop.scope and loop.contains(switch.order):
        return switch.call.node
    for call in file_model.calls_in(loop):
        if call.scope is not loop.scope:
            continue
        target = file_model.resolve(call)
        if target is not None and any(s <= switch.order < e for s, e in file_model.reachable_ranges(target)):
            return call.node
    return switch.call.node
