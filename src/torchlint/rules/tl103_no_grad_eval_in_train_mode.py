"""TL103: evaluation under no_grad with the model still in training mode."""
from __future__ import annotations

from torchlint.tree_gate import TreeIndex
from torchlint.model import FileModel, GradMode
from torchlint.model.expr import bound_paths, identifiers
from torchlint.model.mode_effects import mode_free_model
from torchlint.model.modes import EVAL_WORDS, is_mode_helper, model_key, mode_switches, same_model
from torchlint.model.vocab import FORWARD_METHODS, is_eval_function_name, is_eval_loader_name
from torchlint.rule import Rule


class NoGradEvalInTrainMode(Rule):
    code = "TL103"
    name = "no-grad-eval-in-train-mode"
    message = (
        "model evaluated under no_grad() but never put in eval mode, so dropout and batch-norm "
        "still act as in training; call model.eval() before evaluating (and model.train() after)"
    )
    gate = (r"no_grad|inference_mode|set_grad_enabled", r"\.train\(|backward")

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        return tree_index.evaluation_loops()

    docs = """
## What it does
Finds evaluation loops (in a function named like `evaluate`/`validate`/`test`
over data, or over a validation or test loader) that run a model under
`torch.no_grad()` or `torch.inference_mode()` in a file that trains that
model or calls `model.train()`, while nothing in the file ever puts that
model in eval mode: no `model.eval()`, `model.train(False)`,
`model.train(flag)` or eval-mode helper (`eval_mode(model)`,
`model.apply(set_bn_eval)`).

## Why is this bad
`no_grad()` stops autograd from recording; it does not change how layers
behave. A model in training mode keeps dropping activations at random and
normalises each batch with its own statistics (and updates batch-norm's
running statistics with validation data). Reported metrics are noisy and
too pessimistic, depend on the batch size, and the model saved as "best"
is chosen on wrong numbers.

It is deliberately conservative. Not reported: files that switch the model
to eval mode anywhere (in a caller, a trainer method or a helper), models
built in the evaluating function (an inference script may load a model in
whatever mode it needs), a module evaluating its own submodules (the caller
owns `.eval()`), methods of classes whose base class is defined elsewhere
(trainer base classes usually switch modes around their hooks), forward
passes in loops that also train (a teacher or EMA model under `no_grad`),
files that neither train the model nor call `model.train()`, and models that
`eval()` would not change: every model the file binds to that name is built
in the file from layers that ignore the mode (`nn.Sequential(nn.Linear(...),
nn.ReLU(), nn.Linear(...))`, a class of the file with an embedding, a GRU
without dropout and a linear layer). A class imported from elsewhere, a
loaded model or `nn.Sequential(*layers)` may hold dropout and stays reported.

## Example
```python
def train(model, loader, optimizer):
    model.train()
    ...

def evaluate(model, val_loader):
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct
```

## Use instead
```python
def evaluate(model, val_loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()
    return correct
```
"""

    def check(self, file_model: FileModel):
        if not file_model.is_torch_code or file_model.is_test_file:
            return
        context = _FileModes(file_model)
        for scope in file_model.scopes:
            if scope.name in FORWARD_METHODS or file_model.is_test_function(scope) or _external_base(file_model, scope):
                continue
            done = set()
            for call in scope.calls:
                target = file_model.forward_target(call)
                if target in (None, "self") or not file_model.is_forward(call):
                    continue
                key = model_key(target)
                if key in done or file_model.grad_at(call.site) is not GradMode.NO_GRAD:
                    continue
                if not _evaluation_loop(file_model, scope, call) or _built_in(scope, target, call.order):
                    continue
                if context.managed(target) or not context.trained(target):
                    continue
                if mode_free_model(file_model, target):
                    continue  # no dropout or batch-norm: eval() would change nothing
                done.add(key)
                yield self.report(call.node)

    valid = (
        """\
import torch


def fit(net, loader, test_loader, opt, loss_fn, epochs):
    for epoch in range(epochs):
        net.train()
        for x, y in loader:
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            for x, y in test_loader:
                print(loss_fn(net(x), y).item())
""",
        """\
import torch


def run_epoch(model, loader, optimizer, criterion, training):
    model.train(training)
    for x, y in loader:
        with torch.set_grad_enabled(training):
            loss = criterion(model(x), y)
        if training:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
        """\
import torch


def evaluate(model, val_loader):
    with torch.no_grad():
        for x, y in val_loader:
            acc = (model(x).argmax(1) == y).float().mean()
            print(acc.item())
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def evaluate(model, val_loader):
    with torch.no_grad():
        for x, y in val_loader:
            acc = (model(x).argmax(1) == y).float().mean()  # expect: TL103
            print(acc.item())
""",
        """\
import torch


def train_epoch(net, loader, opt, loss_fn):
    net.train()
    for x, y in loader:
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()


@torch.no_grad()
def test(net, test_loader, loss_fn):
    for x, y in test_loader:
        print(loss_fn(net(x), y).item())  # expect: TL103
""",
    )


class _FileModes:
    """How the file handles module modes, read once."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.switches = mode_switches(file_model, file_model.calls)
        # An eval-mode helper we cannot read might switch any model: trust it.
        # torch.inference_mode() is a grad mode, not a module-mode helper.
        self.helpers = any(
            is_mode_helper(c, EVAL_WORDS) and file_model.resolve(c) is None and file_model.qualify(c) is None
            for c in file_model.calls
        )

    def managed(self, target: str) -> bool:
        """Does anything in the file put ``target`` in eval mode (or a mode we cannot read)?"""
        return self.helpers or any(
            s.to_eval is not False and same_model(s.receiver, target) for s in self.switches
        )

    def trained(self, target: str) -> bool:
        """Does the file call ``target.train()`` or backpropagate through a forward of it?"""
        if any(s.to_eval is False and same_model(s.receiver, target) for s in self.switches):
            return True
        file_model = self.file_model
        for call in file_model.calls:
            ran = file_model.forward_target(call) if file_model.is_forward(call) else None
            if ran is None or not same_model(ran, target) or file_model.grad_at(call.site) is not GradMode.GRAD:
                continue
            if any(file_model.is_backward(c) for c in call.scope.calls):
                return True
        return False


def _external_base(file_model: FileModel, scope) -> bool:
    """A method of a class built on a base from elsewhere (a trainer, a callback, a runner)."""
    cls = file_model.enclosing_class(scope)
    if cls is None or file_model.is_module_class(cls):
        return cls is not None
    return any(base not in file_model.class_bases and base != "object" for base in file_model.class_bases.get(cls, ()))


def _evaluation_loop(file_model: FileModel, scope, call) -> bool:
    """In a loop over evaluation data, or over data in an evaluation function; never in one that trains."""
    loop, evaluates = call.site.loop, False
    while loop is not None:
        role = file_model.loop_role(loop)
        if role.trains:
            return False
        names = set(identifiers(loop.iter)) if loop.iter is not None else set()
        if any(is_eval_loader_name(n) for n in names):
            evaluates = True
        elif is_eval_function_name(scope.name) and (role.data or names & set(scope.params)):
            evaluates = True
        loop = loop.parent
    return evaluates


def _built_in(scope, target: str, order: int) -> bool:
    """Was the model made (built, loaded, copied) in this function before the call?"""
    for a in scope.assignments:
        if a.order < order and a.kind in ("assign", "with") and any(
            same_model(p, target) for t in a.targets for p in bound_paths(t)
        ):
            return True
    return False
