"""TL104: a loop trains a model that its evaluation left in eval mode."""
from __future__ import annotations

from torchlint.model import FileModel, GradMode
from torchlint.model.modes import TRAIN_WORDS, is_mode_helper, model_key, mode_switches, passes_model, same_model
from torchlint.model.vocab import is_eval_function_name, tokens
from torchlint.rule import Rule
from torchlint.text_gate import BACKWARD_CALL, EVAL_SWITCH_CALL

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
    gate = (EVAL_SWITCH_CALL, BACKWARD_CALL + r"|\.step\(")
    docs = """
## What it does
Finds loops that train a model (`backward()` or `optimizer.step()`, in the
loop or in same-module helpers it calls) and, somewhere in the same
iteration, put that model in eval mode for evaluation (`model.eval()` or
`model.train(False)` followed by a no-grad forward pass, or in a function
named like `validate`/`evaluate`/`test`), with no `model.train()` anywhere in
the iteration. The finding is on the call in the loop that leads to the
`eval()`: typically `validate(model, val_loader)`.

## Why is this bad
`eval()` is a mode, not a scope: it stays until `train()` is called. From
the second epoch on, the model trains with dropout disabled and batch-norm
using (and no longer updating) its running statistics. Nothing fails; the
model just trains worse, and the first epoch looks fine.

Not reported: loops that call `model.train()` (or `model.train(flag)`)
anywhere in the iteration, including at the top of a `train_one_epoch`
helper; models put in eval mode on purpose while others train (a teacher,
an EMA or target network, frozen batch-norm during fine-tuning, where the
next forward pass of the model records a graph); models that training code
itself puts in eval mode before running them with grad (a frozen backbone
under a linear probe: evaluation leaving it in eval mode changes nothing);
`self.train()` that runs the module's own `train(mode)` override (one that
keeps frozen batch-norm in eval mode); helpers from other modules that are
handed the model (they may call `train()`); and evaluation after the
training loop.

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

    def check(self, file_model: FileModel):
        if not file_model.is_torch_code or file_model.is_test_file:
            return
        reported = set()
        for scope in file_model.scopes:
            for loop in scope.loops:
                role = file_model.loop_role(loop)
                if not role.trains:
                    continue
                for switch in _forgotten_evals(file_model, role.calls):
                    node = _entry(file_model, loop, switch)
                    if id(node) not in reported:
                        reported.add(id(node))
                        yield self.report(node)

    valid = (
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
    )


def _forgotten_evals(file_model: FileModel, calls):
    switches = mode_switches(file_model, calls)
    for switch in switches:
        target = switch.receiver
        if switch.to_eval is not True or _FROZEN_WORDS & set(tokens(model_key(target))):
            continue
        if any(s.to_eval is not True and same_model(s.receiver, target) for s in switches):
            continue  # train() comes back somewhere in the iteration
        if any(_may_restore(file_model, c, target) for c in calls):
            continue
        if _kept_in_eval_for_training(file_model, target):
            continue
        if _trains(file_model, calls, target) and _for_evaluation(file_model, switch, target):
            yield switch


def _kept_in_eval_for_training(file_model: FileModel, target) -> bool:
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
                if file_model.grad_at(call.site) is GradMode.GRAD:
                    return True
                break
    return False


def _may_restore(file_model: FileModel, call, target) -> bool:
    """A helper we cannot read that gets the model, or one named for switching modes.

    Same-module helpers are not guessed at: the loop's calls include theirs.
    """
    if file_model.resolve(call) is not None or file_model.qualify(call) is not None or call.callee in _BUILTINS:
        return False
    if is_mode_helper(call, TRAIN_WORDS) and (call.receiver is None or same_model(call.receiver, target)):
        return True
    return passes_model(call, target)


def _forward_of(file_model: FileModel, call):
    if file_model.is_forward(call):
        return file_model.forward_target(call)
    if file_model.is_submodule_forward(call):
        return call.receiver
    return None


def _trains(file_model: FileModel, calls, target) -> bool:
    """A forward pass of ``target`` that records a graph, in a function that backpropagates."""
    for call in calls:
        ran = _forward_of(file_model, call)
        if ran is None or not same_model(ran, target) or file_model.grad_at(call.site) is not GradMode.GRAD:
            continue
        if any(file_model.is_backward(c) or file_model.is_loss_call(c) for c in call.scope.calls):
            return True
    return False


def _for_evaluation(file_model: FileModel, switch, target) -> bool:
    """Is this eval() for evaluating, not for freezing batch-norm while training?

    It is in an evaluation function, or the model's next forward pass in the
    same function runs without grad, or an evaluation helper is called next.
    """
    scope = switch.call.scope
    if is_eval_function_name(scope.name):
        return True
    for call in scope.calls:
        if call.order <= switch.order:
            continue
        ran = _forward_of(file_model, call)
        if ran is not None and same_model(ran, target):
            return file_model.grad_at(call.site) is not GradMode.GRAD
        helper = file_model.resolve(call)
        if helper is not None and is_eval_function_name(helper.name):
            return True
    return False


def _entry(file_model: FileModel, loop, switch):
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
