"""TL101: evaluation code runs the model without no_grad, building a graph nobody uses."""
from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from torchlint.tree_gate import TreeIndex
from torchlint import tree_gate
from torchlint.edits import enclosing_statement, shadowed, suspends, torch_reference, without_volatile, wrap_in_with
from torchlint.model import FileModel, GradMode, Span, modes
from torchlint.model.expr import dotted, identifiers
from torchlint.model.vocab import is_eval_data_name, is_eval_function_name, is_eval_loader_name, is_transform_name
from torchlint.rule import Fix, Rule
from torchlint.text_gate import EVAL_SWITCH_CALL, text_search


def mode_switches(file_model: FileModel, scope) -> list:
    """``(order, receiver, is_eval)`` for each ``x.eval()`` / ``x.train(...)`` in ``scope``.
    A ``train(flag)`` that cannot be read counts as a switch back to training: the
    code may evaluate with gradients on purpose, and silence costs less than a false alarm."""
    return [(s.order, s.receiver, s.to_eval is True) for s in modes.mode_switches(file_model, scope.calls)]


def _covers(receiver: str, target: str) -> bool:
    return target == receiver or target.startswith(receiver + ".")


_EVAL_SWITCH = text_search(EVAL_SWITCH_CALL)


def _switches_and_runs(tree_index: TreeIndex) -> bool:
    """A function (or the module) that switches something to eval mode and calls
    it, ``self`` or a model-named callee: the calls ``FileModel.is_forward`` takes
    for forward passes, given the switched models."""
    if not _EVAL_SWITCH(tree_index.code_text()):
        return False
    for body in tree_index.bodies:
        switched, calls = set(), []
        for node in tree_gate.own_nodes(body):
            if isinstance(node, ast.Call):
                receiver = _eval_switch_receiver(node)
                if receiver is not None:
                    switched.add(receiver)
                else:
                    calls.append(node)
        if switched and any(tree_gate.may_be_forward(c) or tree_gate.forward_callee(c) in switched for c in calls):
            return True
    return False


def _eval_switch_receiver(call: ast.Call) -> Optional[str]:
    """``m`` of ``m.eval()``, ``m.train(False)``, ``m.train(mode=0)``: ``modes.mode_switch`` to eval."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("eval", "train"):
        return None
    if func.attr == "eval":
        return None if call.args or call.keywords else tree_gate.dotted(func.value)
    flags = [*call.args, *(k.value for k in call.keywords if k.arg == "mode")]
    if len(flags) != 1 or not isinstance(flags[0], ast.Constant):
        return None
    value = flags[0].value
    return tree_gate.dotted(func.value) if value is False or (type(value) is int and value == 0) else None


class EvalWithoutNoGrad(Rule):
    code = "TL101"
    name = "eval-without-no-grad"
    message = (
        "model called in evaluation code without torch.no_grad(); wrap the evaluation in "
        "`with torch.no_grad():` (or torch.inference_mode())"
    )
    fix_safety = "unsafe"
    # Spelled out rather than (?i:...): a case-insensitive group makes the scan several times slower.
    gate = (EVAL_SWITCH_CALL + r"|[Ll]oader|LOADER|[Bb]atches|[Ii]terator|[Dd]l\b|"
            r"def \w*(?:[Ee]val|EVAL|[Vv]al|VAL|[Tt]est|TEST|[Pp]redict|[Ii]nfer)",)

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        """Code that switches a model to eval mode and runs it, or a loop that runs a
        model-named call over evaluation data or in a function named like evaluation."""
        return _switches_and_runs(tree_index) or tree_index.evaluation_loops()

    docs = """
## What it does
Finds forward passes in evaluation or inference code that run while autograd
is recording: after `model.eval()` (with no `model.train()` back), in a loop of
a function named like `evaluate`/`validate`/`test`/`predict`/`inference`, or in
a loop over a validation or test loader, with neither `torch.no_grad()` nor
`torch.inference_mode()` in effect.

## Why is this bad
`model.eval()` only switches dropout and batch-norm to inference behaviour; it
does not stop autograd. Every forward pass still records a graph and keeps
the activations it needs for a backward pass that never comes: evaluation
takes more memory (often the difference between fitting a batch size and an
out-of-memory error) and more time. If the outputs are then stored, the
graphs of the whole evaluation stay alive.

torchlint stays silent where grad mode is already off: under `no_grad`,
`inference_mode` or `set_grad_enabled(False)`, in functions decorated with
them, in functions only called from such regions in the same module, and in
framework hooks that run without grad (Lightning's `validation_step`,
`test_step`, `predict_step`). Code that deliberately needs gradients in
evaluation (input gradients, adversarial examples, test-time training: a
`backward()`, `autograd.grad` or `requires_grad_()` nearby) is left alone, as
are pytest test functions. So is a single forward pass that runs once, outside
any loop or comprehension (and not in a helper a loop of the file calls):
one image classified and shown, one batch plotted, one sentence encoded for
translation. Its graph is freed with its output; nothing is evaluated over a
dataset. A single forward over a whole evaluation set (`model(x_test)`,
`net(X_val)`) is still reported.

## Example
```python
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
```

## Use instead
```python
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
```

## Fix safety
The fix wraps the loop that holds the forward pass (outside a loop, the
statement) in `with torch.no_grad():`, naming torch the way the file does
(`T.no_grad()` after `import torch as T`) and adding `import torch` only when
the file lacks it. It is unsafe: code the loop calls in other modules, which
torchlint does not read, may need gradients (input gradients, hooks, a
helper that trains), and a caller may backpropagate through the outputs;
under `no_grad` they no longer require grad, so such code raises or silently
stops learning. No fix is offered for loops that `yield` or `await`, or are
`async for` loops (the `with` would leave grad mode off in the caller, or in
other coroutines, while they are suspended), for one-line bodies, or where a
local name (a parameter called `torch`) hides the module the fix would name.
"""

    def check(self, file_model: FileModel):
        if not file_model.is_torch_code or file_model.is_test_file:
            return
        for scope in file_model.scopes:
            if not scope.calls or _handles_grad(scope) or file_model.part_of_forward(scope):
                continue
            if file_model.is_test_function(scope):
                continue
            switches = mode_switches(file_model, scope)
            # A transform put in eval mode (botorch's outcome_transform) is not a model.
            models = {receiver for _, receiver, is_eval in switches if is_eval and not is_transform_name(receiver)}
            for call in scope.calls:
                if not file_model.is_forward(call, models):
                    continue
                if file_model.grad_at(call.site) is not GradMode.GRAD:
                    continue
                if call.site.loop is None and file_model.flows_to_return(call):
                    continue  # one forward handed back: the caller may want its graph
                if not file_model.repeats(call) and not _on_eval_data(call):
                    continue  # one image shown, one batch plotted: no evaluation loop
                span = self._evaluation_span(file_model, scope, call, switches)
                if span is not None and not self._needs_grad(file_model, span):
                    yield self.report(call.node, fix=_no_grad_fix(file_model, call))

    def _evaluation_span(self, file_model: FileModel, scope, call, switches):
        """The stretch of code that makes this call evaluation, as (start, end), or None."""
        target = file_model.forward_target(call)
        last = None
        for order, receiver, is_eval in switches:
            if order < call.order and _covers(receiver, target):
                last = (order, receiver, is_eval)
        if last is not None and last[2]:
            ends = [o for o, r, e in switches if o > last[0] and not e and _covers(r, target)]
            return (last[0], min(ends, default=scope.end))
        if last is not None:
            return None  # the model was put back in training mode
        loop = call.site.loop
        while loop is not None:
            if loop.iter is not None and any(is_eval_loader_name(n) for n in identifiers(loop.iter)):
                return (loop.start, loop.end)
            loop = loop.parent
        if not scope.is_module and is_eval_function_name(scope.name) and _in_data_loop(file_model, scope, call):
            return (scope.start, scope.end)
        return None

    @staticmethod
    def _needs_grad(file_model: FileModel, span) -> bool:
        """Gradients are wanted here: input gradients, attacks, test-time training."""
        window = Span(*span)
        return any(
            file_model.computes_gradients(call) or file_model.stepped_optimizer(call)
            for call in file_model.reachable_calls(window)
        )

    valid = (
        """\
import torch


def run_epoch(model, loaders, optimizer, criterion):
    for phase in ("train", "val"):
        model.train(phase == "train")
        for x, y in loaders[phase]:
            with torch.set_grad_enabled(phase == "train"):
                loss = criterion(model(x), y)
            if phase == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
""",
        """\
import torch
import torch.nn.functional as F
import pytorch_lightning as pl


class Classifier(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("val_loss", loss)
""",
        """\
import torch


def evaluate_robustness(model, val_loader, eps=0.03):
    model.eval()
    for x, y in val_loader:
        x = x.clone().requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        (grad,) = torch.autograd.grad(loss, x)
        yield (x + eps * grad.sign()).detach()
""",
    )
    invalid = (
        """\
import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        logits = model(x)  # expect: TL101
        correct += (logits.argmax(1) == y).sum().item()
    return correct
""",
        """\
import torch


def predict(model, batches):
    model.eval()
    labels = []
    for batch in batches:
        labels.extend(model(batch).argmax(-1).tolist())  # expect: TL101
    return labels
""",
    )


def _no_grad_fix(file_model: FileModel, call):
    """Wrap the loop around the forward pass (or its statement, outside loops) in ``no_grad``."""
    loop = call.site.loop
    target = loop.node if loop is not None else enclosing_statement(file_model, call.node)
    if target is None or isinstance(target, (cst.FunctionDef, cst.ClassDef)) or suspends(target):
        return None  # a one-line suite, or a generator/coroutine that would leak no_grad to its caller
    name, imports = torch_reference(file_model, "no_grad")
    if shadowed(call.scope, name.split(".")[0]):
        return None  # ``def evaluate(model, torch)``: the name would not reach the module
    what = "loop" if loop is not None else "statement"
    # Under the new no_grad a volatile Variable inside is dead code; left there, it
    # would look fixed (TL105 is silent under no_grad) while still in the file.
    return Fix(f"wrap the evaluation {what} in `with {name}():`",
               ((target, wrap_in_with(without_volatile(file_model, target), f"{name}()")),), imports)


def _on_eval_data(call) -> bool:
    """A forward over a whole evaluation set at once: ``model(x_test)``, ``net(X_val.to(device))``,
    ``likelihood(model(test_x))`` (not one sample of it, ``model(x_test[:1])``)."""
    return any(_reads_eval_data(arg.value) for arg in call.node.args)


def _reads_eval_data(expr) -> bool:
    if isinstance(expr, cst.Call):
        receiver = expr.func.value if isinstance(expr.func, cst.Attribute) else None
        return (receiver is not None and _reads_eval_data(receiver)) or any(
            _reads_eval_data(arg.value) for arg in expr.args)
    path = dotted(expr)
    return path is not None and is_eval_data_name(path.rsplit(".", 1)[-1])


def _handles_grad(scope) -> bool:
    """The code sets requires_grad itself: it froze the model or wants input gradients."""
    if any(call.method == "requires_grad_" for call in scope.calls):
        return True
    return any(
        isinstance(t, cst.Attribute) and t.attr.value == "requires_grad"
        for a in scope.assignments for t in a.targets
    )


def _in_data_loop(file_model: FileModel, scope, call) -> bool:
    """Inside a loop over a loader, or over data the function was given."""
    loop = call.site.loop
    while loop is not None:
        if file_model.loop_role(loop).data:
            return True
        if loop.iter is not None and not _is_range(loop.iter):
            if set(identifiers(loop.iter)) & set(scope.params):
                return True
        loop = loop.parent
    return False


def _is_range(expr) -> bool:
    return isinstance(expr, cst.Call) and dotted(expr.func) in ("range", "reversed", "enumerate") and (
        dotted(expr.func) == "range" or (expr.args and _is_range(expr.args[0].value))
    )
