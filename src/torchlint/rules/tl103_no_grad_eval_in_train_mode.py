"""TL103: evaluation under no_grad with the model still in training mode."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Set

import libcst as cst

from torchlint.model import FileModel, GradMode
from torchlint.model.backprop import consumed_by_backward
from torchlint.model.expr import bound_paths, dotted, identifiers, keyword, positional, referenced_paths
from torchlint.model.evaluation import on_random_input
from torchlint.model.mode_effects import loaded_in_training_mode, mode_free_model
from torchlint.model.modes import EVAL_WORDS, is_mode_helper, model_key, mode_switches, passes_model, same_model
from torchlint.model.vocab import (
    FORWARD_METHODS, is_eval_data_name, is_eval_function_name, is_eval_loader_name, last_name, tokens,
)
from torchlint.needs import (
    COMPUTES_GRADIENTS, CallsItsOwn, EvaluationLoop, ImportTimeForward, SwitchesToTraining, Text,
)
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Scope
    from torchlint.rule import Finding


def _eval_data_name(name: str) -> bool:
    return is_eval_data_name(name) and "train" not in tokens(name)


class NoGradEvalInTrainMode(Rule):
    code = "TL103"
    name = "no-grad-eval-in-train-mode"
    message = (
        "model evaluated under no_grad() but never put in eval mode, so dropout and batch-norm "
        "still act as in training; call model.eval() before evaluating (and model.train() after)"
    )
    torch_programs_only = True
    # Evaluation code in a file that trains (a backward, ``autograd.grad``, a switch to training
    # mode); or weights loaded and grad turned off somewhere, what ``_inference_only`` needs: an
    # inference script's model, built here in training mode and given trained weights.
    needs = ((CallsItsOwn(is_eval_function_name) | EvaluationLoop() | ImportTimeForward(_eval_data_name))
             & (COMPUTES_GRADIENTS | SwitchesToTraining())
             | Text(r"load_state_dict\(") & Text(r"no_grad|inference_mode|set_grad_enabled"))

    docs = """
## What it does
Finds evaluation code that runs a model in a file that trains that model or
calls `model.train()`, while nothing in the file ever puts that model in
eval mode: no `model.eval()`, `model.train(False)`, `model.train(flag)`,
eval-mode helper (`eval_mode(model)`, `model.apply(set_bn_eval)`) or call of
a function of the file that switches the model it is handed. Evaluation
code is a loop over a validation or test loader (also one between the epochs
of a training loop), a loop over data in a function named like
`evaluate`/`validate`/`test`/`predict`, such a function called in the file
(`predict(model, image)`), or a script's forward over evaluation data
(`preds = model(X_test)`). The rule's name is about the usual case,
evaluation under `torch.no_grad()`; evaluation that also forgot `no_grad()`
is reported too, with its own message ("model evaluated but never put in
eval mode ..."), and TL101 reports the missing `no_grad()`.

A file that trains nothing is read too when it predicts under `no_grad()` or
`inference_mode()` with a model it built itself (a class of the file, an
`nn.Sequential`) with batch-norm or dropout, and gave trained weights with
`load_state_dict`: an inference script or a service. A module starts in
training mode and loading weights keeps it there. Not reported: a forward
whose output is not used (a pass that recalibrates batch-norm statistics),
random input (a shape check), a dropout rate the file does not show, classes
that switch their own mode, and models the file did not build (`torch.load` of
a whole model, `from_pretrained`, torchvision or timm builders).

## Why is this bad
`no_grad()` stops autograd from recording; it does not change how layers
behave. A model in training mode keeps dropping activations at random and
normalises each batch with its own statistics (and updates batch-norm's
running statistics with validation data). Reported metrics are noisy and
too pessimistic, depend on the batch size, and the model saved as "best"
is chosen on wrong numbers; predictions change from call to call.

It is deliberately conservative. Not reported: files that switch the model
to eval mode anywhere (in a caller, a trainer method or a helper, a notebook
cell before), in a file that trains, models built in the evaluating function
(it may load a model in whatever mode it needs) unless that function trained
it first, a module evaluating its own submodules (the caller owns `.eval()`),
methods of classes whose base class is defined elsewhere (trainer base
classes and Lightning switch modes around their hooks), forward passes in
loops that also train (a teacher or EMA model under `no_grad`), helpers
whose every caller put the model it passes in eval mode, evaluation run only
before any training (a shape check), code that computes gradients (test-time
adaptation), files that neither train the model nor call `model.train()`
(other than the inference scripts above),
Monte-Carlo dropout (`model.train()` just before predicting with no training
in between, `enable_dropout(model)`, `m.train()` over `model.modules()`),
and models that `eval()` would not change: every model the file binds to
that name is built in the file from layers that ignore the mode
(`nn.Sequential(nn.Linear(...), nn.ReLU(), nn.Linear(...))`, a class of the
file with an embedding, a GRU without dropout, or a one-layer GRU whose
`dropout` has no layer to act between, and a linear layer). A class imported
from elsewhere (torchvision, timm), a loaded model or `nn.Sequential(*layers)`
may hold dropout or batch-norm and stays reported.

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

    # The same forgotten eval() where the evaluation also forgot no_grad (TL101 says that).
    grad_message = (
        "model evaluated but never put in eval mode, so dropout and batch-norm still act as in "
        "training; call model.eval() before evaluating (and model.train() after)"
    )

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        context = _FileModes(file_model)
        if context.dropout_on_purpose:
            return  # Monte-Carlo dropout: training mode at prediction time is the point
        for scope in file_model.scopes:
            if scope.name in FORWARD_METHODS or file_model.is_test_function(scope) or _external_base(file_model, scope):
                continue
            done = set()
            for call in scope.calls:
                target = file_model.forward_target(call)
                if target in (None, "self") or not file_model.is_forward(call):
                    continue
                key = model_key(target)
                if key in done:
                    continue
                if not _evaluated_in_train_mode(file_model, context, scope, call, target):
                    continue
                done.add(key)
                no_grad = file_model.grad_at(call.site) is GradMode.NO_GRAD
                yield self.report(call.node, message=None if no_grad else self.grad_message)

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
        """\
import torch


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def evaluate(model, val_loader):
    return sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)


def main(net, loader, val_loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        train_epoch(net, loader, optimizer, criterion)
        net.eval()
        with torch.no_grad():
            print(evaluate(net, val_loader))
""",
        """\
import torch


def fit(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def predict_mc(model, x_test, samples=20):
    model.train()  # Monte-Carlo dropout: dropout stays on for every sample
    with torch.no_grad():
        return torch.stack([model(x_test).softmax(-1) for _ in range(samples)])


def main(model, loader, x_test, optimizer, criterion):
    fit(model, loader, optimizer, criterion)
    print(predict_mc(model, x_test).std(0))
""",
        """\
import torch
import torchvision

model = torchvision.models.resnet18(num_classes=10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
print(model(torch.zeros(2, 3, 32, 32)).shape)


def evaluate_accuracy(net, x_test, y_test):
    net.eval()
    return (net(x_test).argmax(1) == y_test).float().mean()


for x, y in train_loader:
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
print(evaluate_accuracy(model, X_test, y_test))
preds = model(X_test).argmax(1)
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
        """\
import torch


def fit(model, loader, val_loader, optimizer, criterion, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
        correct = 0
        for x, y in val_loader:
            correct += (model(x).argmax(1) == y).sum().item()  # expect: TL103
        print(epoch, correct)
""",
        """\
import timm
import torch


def fit(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def predict(model, image):
    return model(image.unsqueeze(0)).argmax(1).item()  # expect: TL103


def main(loader, image):
    model = timm.create_model("resnet50", num_classes=10)
    fit(model, loader, torch.optim.AdamW(model.parameters()))
    print(predict(model, image))
""",
        """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(10):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(X_train), y_train).backward()
    optimizer.step()

y_pred = model(X_test).argmax(1)  # expect: TL103
print((y_pred == y_test).float().mean())
""",
    )


def _evaluated_in_train_mode(file_model: FileModel, context: "_FileModes", scope: Scope, call: CallSite,
                             target: str) -> bool:
    """Is this forward evaluation of a trained model that nothing puts in eval mode, where
    eval() would change something?"""
    if _inference_only(file_model, context, call, target):
        return True
    if not (_evaluation_loop(file_model, scope, call) or _prediction(file_model, scope, call)):
        return False
    if _built_in(scope, target, call.order) and not _trained_before(file_model, scope, target, call.order):
        return False  # an inference script's freshly loaded model
    if context.managed(target) or not context.trained(target):
        return False
    if _train_mode_on_purpose(file_model, scope, call, target) or _callers_switch_to_eval(file_model, scope, target):
        return False
    if not _after_training(file_model, scope, call):
        return False  # a shape check before training: the mode changes nothing yet
    return not mode_free_model(file_model, target)  # no dropout or batch-norm: eval() changes nothing


def _inference_only(file_model: FileModel, context: "_FileModes", call: CallSite, target: str) -> bool:
    """An inference script or service: a file that trains nothing predicts under ``no_grad`` or
    ``inference_mode`` with a model it built with batch-norm or dropout and loaded trained
    weights into, never switched to eval mode. What the forward returns is used (not a
    batch-norm recalibration pass that runs the model for its running statistics) and its
    input is not random (a shape check)."""
    if file_model.grad_at(call.site) is not GradMode.NO_GRAD or context.trains_anything or context.managed(target):
        return False
    stmt = call.site.stmt
    if isinstance(stmt, cst.Expr) and stmt.value is call.node:
        return False
    if call.node.args and all(on_random_input(file_model, call.scope, arg.value) for arg in call.node.args):
        return False
    return loaded_in_training_mode(file_model, target)


class _FileModes:
    """How the file handles module modes, read once."""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self.switches = mode_switches(file_model, file_model.calls)
        self._switched: Optional[Set[str]] = None
        # An eval-mode helper we cannot read might switch any model: trust it.
        # torch.inference_mode() is a grad mode, not a module-mode helper.
        self.helpers = any(
            is_mode_helper(c, EVAL_WORDS) and file_model.resolve(c) is None and file_model.qualify(c) is None
            for c in file_model.calls
        )

    @property
    def dropout_on_purpose(self) -> bool:
        """Monte-Carlo dropout: ``enable_dropout(model)``, ``model.apply(apply_dropout)``, or
        ``m.train()`` over ``model.modules()`` (dropout layers switched back on)."""
        file_model = self.file_model
        if any(_names_dropout_switch(file_model, c) for c in file_model.calls):
            return True
        submodules = {p for a in file_model.assignments if a.kind == "for" and _iterates_submodules(a.value)
                      for t in a.targets for p in bound_paths(t)}
        return any(s.to_eval is not True and s.receiver in submodules for s in self.switches)

    @property
    def switched(self) -> set:
        """The paths the file puts in eval mode (or a mode we cannot read): receivers of
        ``eval()``, and what callers hand to a function that switches its parameter
        (``evaluate_accuracy(mlp)`` where ``def evaluate_accuracy(net): net.eval()``)."""
        if self._switched is None:
            found, todo = set(), [(s.call.scope, s.receiver) for s in self.switches if s.to_eval is not False]
            while todo:
                scope, path = todo.pop()
                if (scope, path) in found:
                    continue
                found.add((scope, path))
                handed_in = _handed_in(self.file_model, scope, path, strict=False)
                todo.extend((call.scope, handed) for call, handed in handed_in)
            self._switched = {path for _, path in found}
        return self._switched

    @property
    def trains_anything(self) -> bool:
        """Does the file backpropagate, step an optimizer, or switch anything to training mode
        (or to a mode we cannot read)?"""
        file_model = self.file_model
        return any(s.to_eval is not True for s in self.switches) or any(
            file_model.needs_autograd(c) for c in file_model.calls)

    def managed(self, target: str) -> bool:
        """Does anything in the file put ``target`` in eval mode (or a mode we cannot read)?"""
        return self.helpers or any(same_model(path, target) for path in self.switched)

    def trained(self, target: str) -> bool:
        """Does the file call ``target.train()`` or backpropagate through a forward of it?"""
        if any(s.to_eval is False and same_model(s.receiver, target) for s in self.switches):
            return True
        file_model = self.file_model
        for call in file_model.calls:
            ran = file_model.forward_target(call) if file_model.is_forward(call) else None
            if ran is None or not same_model(ran, target) or file_model.grad_at(call.site) is not GradMode.GRAD:
                continue
            if file_model.backwards_in(call.scope):
                return True
        return False


def _external_base(file_model: FileModel, scope: Scope) -> bool:
    """A method of a class built on a base from elsewhere (a trainer, a callback, a runner)."""
    cls = file_model.enclosing_class(scope)
    if cls is None or file_model.is_module_class(cls):
        return cls is not None
    return any(base not in file_model.class_bases and base != "object" for base in file_model.class_bases.get(cls, ()))


def _names_dropout_switch(file_model: FileModel, call: CallSite) -> bool:
    """``enable_dropout(model)``, ``enable_mc_dropout(net)``, ``model.apply(apply_dropout)``:
    a helper of the project (not torch's ``F.dropout`` or ``nn.Dropout``) about dropout."""
    if call.method == "apply":
        return any(_switches_dropout(last_name(p)) for a in call.node.args for p in referenced_paths(a.value))
    if not _switches_dropout(call.method or last_name(call.callee or "")):
        return False  # the name first: qualifying every call of the file costs more
    qualified = file_model.qualify(call)
    return qualified is None or not qualified.startswith("torch.")


def _switches_dropout(name: str) -> bool:
    words = tokens(name)
    return "dropout" in words and not _SWITCHING_WORDS.isdisjoint(words)


# With ``dropout`` in a helper's name: one that turns dropout on (not ``self.dropout(x)``).
_SWITCHING_WORDS = frozenset("enable enabled activate apply mc monte set turn train keep on".split())


def _iterates_submodules(value: Optional[cst.BaseExpression]) -> bool:
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("modules", "children", "named_modules", "named_children"))


def _evaluation_loop(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """In a loop over evaluation data (that loop training nothing, even inside an epoch loop
    that trains), or over data in an evaluation function; never in one that trains."""
    loop, evaluates = call.site.loop, False
    while loop is not None:
        role = file_model.loop_role(loop)
        if role.trains:
            return False
        names = set(identifiers(loop.iter)) if loop.iter is not None else set()
        if any(is_eval_loader_name(n) for n in names):
            return True
        if is_eval_function_name(scope.name) and (role.data or names & set(scope.params)):
            evaluates = True
        loop = loop.parent
    return evaluates


def _prediction(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """Prediction outside an evaluation loop: in a function named like evaluation or prediction
    (``predict(model, image)``) that computes no gradient and is called here, or, in a script's own code, a forward
    over evaluation data (``model(X_test)``) that no backward consumes. Never in a loop that trains."""
    if _in_training_loop(file_model, call):
        return False
    if scope.is_module:
        return _reads_eval_data(call) and not _feeds_backward(file_model, scope, call)
    if not is_eval_function_name(scope.name) or not file_model.callers.get(scope):
        return False  # a library's predict(): its callers, and what they switched, are elsewhere
    return not any(file_model.needs_autograd(c) for c in file_model.reachable_calls(scope))


def _in_training_loop(file_model: FileModel, call: CallSite) -> bool:
    loop = call.site.loop
    while loop is not None:
        if file_model.loop_role(loop).trains:
            return True
        loop = loop.parent
    return False


def _reads_eval_data(call: CallSite) -> bool:
    """``model(X_test)``, ``net(x_val.to(device))``: a forward over evaluation data (not
    ``train_valid_iter``, training data named after the split it merges)."""
    return any(_eval_data_name(last_name(p)) for arg in call.node.args for p in referenced_paths(arg.value))


def _feeds_backward(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """Is the forward's result bound to a name a backward of the scope consumes?"""
    stmt = call.site.stmt
    if isinstance(stmt, cst.Assign):
        targets = [t.target for t in stmt.targets]
    elif isinstance(stmt, (cst.AnnAssign, cst.AugAssign)):
        targets = [stmt.target]
    else:
        return any(file_model.is_backward(c) for c in scope.calls if c.site.stmt is stmt)
    consumed = consumed_by_backward(file_model, scope)
    return any(p in consumed for t in targets for p in bound_paths(t))


def _trains_between(file_model: FileModel, scope: Scope, start: int, end: int) -> bool:
    """Does ``scope``'s own code between the two orders (or a same-module helper it calls
    there) backpropagate or step an optimizer? A helper that calls ``train()`` trains too (its
    backward may be in a library's ``train_batch``). Functions defined in between do not count."""
    for call in scope.calls:
        if not start <= call.order < end:
            continue
        if file_model.is_training_call(call):
            return True
        helper = file_model.resolve(call)
        if helper is None:
            continue
        reached = file_model.reachable_calls(helper)
        if any(map(file_model.is_training_call, reached)):
            return True
        if any(switch.to_eval is False for switch in mode_switches(file_model, reached)):
            return True
    return False


def _after_training(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """Does the forward run after some training: after code of its own scope that trains,
    or, in a function, when some caller calls it after training."""
    if _in_training_loop(file_model, call) or _trains_between(file_model, scope, scope.start, call.order):
        return True
    return not scope.is_module and _reached_after_training(file_model, scope)


def _reached_after_training(file_model: FileModel, scope: Scope, depth: int = 0) -> bool:
    """Does some call of this function come after training (or in a loop that trains: every
    epoch after the first)? Not a shape check run once before training starts. True when
    no caller is in view."""
    callers = file_model.callers.get(scope)
    if not callers or depth > 3:
        return True
    for call in callers:
        if _in_training_loop(file_model, call) or _trains_between(file_model, call.scope, call.scope.start, call.order):
            return True
        if not call.scope.is_module and _reached_after_training(file_model, call.scope, depth + 1):
            return True
    return False


def _trained_before(file_model: FileModel, scope: Scope, target: str, order: int) -> bool:
    """Did this function train ``target`` before ``order`` (here or in a helper it hands the
    model to)? A model built, trained and then evaluated in one script is not an inference
    script's freshly loaded model."""
    if not _trains_between(file_model, scope, scope.start, order):
        return False
    for c in scope.calls:
        if c.order >= order:
            break
        if file_model.is_forward(c) and same_model(file_model.forward_target(c) or "", target) \
                and file_model.grad_at(c.site) is GradMode.GRAD:
            return True
        if file_model.resolve(c) is not None and passes_model(c, target):
            return True
    return False


def _train_mode_on_purpose(file_model: FileModel, scope: Scope, call: CallSite, target: str) -> bool:
    """``model.train()`` right before predicting, with no training in between (Monte-Carlo
    dropout), here or in a caller that hands the model over."""
    if _last_switch_trains(file_model, scope.calls, target, call.order):
        return True
    return any(_last_switch_trains(file_model, c.scope.calls, path, c.order)
               for c, path in _handed_in(file_model, scope, target))


def _last_switch_trains(file_model: FileModel, calls: List[CallSite], target: str, order: int) -> bool:
    last = None
    for switch in mode_switches(file_model, calls):
        if switch.order < order and same_model(switch.receiver, target):
            last = switch
    if last is None or last.to_eval is True:
        return False
    return not _trains_between(file_model, last.call.scope, last.order + 1, order)


def _callers_switch_to_eval(file_model: FileModel, scope: Scope, target: str, depth: int = 0) -> bool:
    """The model is a parameter and every caller in the file put what it passes in eval mode
    (``net.eval(); evaluate(net, loader)``), or got it from its own callers that did."""
    handed = _handed_in(file_model, scope, target)
    if not handed or depth > 3:
        return False
    for call, path in handed:
        last = None
        for switch in mode_switches(file_model, call.scope.calls):
            if switch.order < call.order and same_model(switch.receiver, path):
                last = switch
        if last is not None:
            if last.to_eval is not True:
                return False
        elif not _callers_switch_to_eval(file_model, call.scope, path, depth + 1):
            return False
    return True


def _handed_in(file_model: FileModel, scope: Scope, target: str, strict: bool = True) -> list:
    """``(call, path)`` for each same-module call of ``scope`` that passes ``path`` as the
    parameter ``target`` starts with; [] when it is no parameter or (``strict``) a call
    passes no plain name."""
    root = target.split(".", 1)[0]
    if root not in scope.params:
        return []
    index, found = scope.params.index(root), []
    for call in file_model.callers.get(scope, ()):
        arg = keyword(call.node, root)
        if arg is None:
            offset = 1 if scope.class_name is not None and call.receiver is not None else 0
            arg = positional(call.node, index - offset)
        path = dotted(arg) if arg is not None else None
        if path is not None:
            found.append((call, path))
        elif strict:
            return []
    return found


def _built_in(scope: Scope, target: str, order: int) -> bool:
    """Was the model made (built, loaded, copied) in this function before the call?"""
    for a in scope.assignments:
        if a.order < order and a.kind in ("assign", "with") and any(
            same_model(p, target) for t in a.targets for p in bound_paths(t)
        ):
            return True
    return False
