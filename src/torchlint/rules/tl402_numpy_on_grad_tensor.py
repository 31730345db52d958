"""TL402: ``.numpy()`` on a tensor that requires grad raises at run time."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator
import libcst as cst

from torchlint.edits import method_call
from torchlint.model import FileModel, GradMode
from torchlint.model.leaves import file_freezes, known_grad_scope
from torchlint.needs import COMPUTES_GRADIENTS, TRAINING_STEP, Call, ImportTimeCall, Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.rule import Finding


def _fix(numpy_call: cst.Call) -> Fix:
    """``.detach()`` goes before a ``.cpu()`` that directly precedes ``.numpy()``
    (``x.detach().cpu().numpy()``, the idiom torch's own error suggests), else
    right before ``.numpy()``."""
    assert isinstance(numpy_call.func, cst.Attribute)  # ``x.numpy()``
    receiver = numpy_call.func.value
    target = receiver
    if (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute)
            and receiver.func.attr.value == "cpu" and not receiver.args):
        target = receiver.func.value
    return Fix("call .detach() before .numpy()", edits=((target, method_call(target, "detach")),))


class NumpyOnGradTensor(Rule):
    code = "TL402"
    name = "numpy-on-grad-tensor"
    message = (
        ".numpy() on a tensor that requires grad raises RuntimeError; call .detach() first "
        "(`x.detach().cpu().numpy()`)"
    )
    fix_safety = "safe"
    torch_programs_only = True
    # Code known to record: a function that backpropagates, training_step, enable_grad, or
    # module-level script code and the helpers it calls.
    needs = Call("numpy", method=True) & (COMPUTES_GRADIENTS | TRAINING_STEP | Text("enable_grad|set_grad_enabled")
                                          | ImportTimeCall("numpy"))

    docs = """
## What it does
Finds `.numpy()` (also `.cpu().numpy()`, `.to("cpu").numpy()`) on a tensor
that carries an autograd graph: a model output, a loss, or a value computed
from them while autograd records, in code that surely runs with grad
enabled (module-level script code, a function that itself calls
`backward()`, or a function whose callers in the same file all record).

## Why is this bad
With grad mode on, `Tensor.numpy()` refuses a tensor that requires grad:
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use
tensor.detach().numpy() instead.` The line crashes the first time it runs,
typically in logging or metric code at the end of the first training step.

Not reported: `.numpy()` under `torch.no_grad()` / `inference_mode()` (or in
a function decorated with them, or only called from such code), where torch
allows it; after `.detach()`, on `.data`, on `.item()`/`.tolist()` values, on
data tensors, with `numpy(force=True)`; on integer and bool results, which
never require grad: `argmax`/`argmin`, the indices of `torch.max(x, dim)` /
`x.max(1)[1]` / `topk(...)[1]` / `sort(...)[1]` / `.indices`, comparisons
(`pred == y`), `.long()`/`.int()`, a draw from a distribution
(`Categorical(logits=out).sample()`), and what a method of the file's own
class returns when it returns one of those (`agent.act(s)` returning
`q.argmax()`); a loss of tensors made from data alone
(`F.mse_loss(rewards, baseline)` with both from `torch.zeros`/`torch.tensor`);
in helpers with no caller in the
same file (a caller elsewhere may run them under `no_grad`), and, outside
functions that backpropagate, in files that freeze parameters
(`requires_grad_(False)`): a frozen model's outputs do not require grad.

## Example
```python
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    probs.append(torch.sigmoid(out).cpu().numpy())
```

## Use instead
```python
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    probs.append(torch.sigmoid(out).detach().cpu().numpy())
```

## Fix safety
Safe: `.detach()` returns the same values without the graph, which is what
`.numpy()` would have returned had torch allowed it. It is inserted before
a `.cpu()` that directly precedes `.numpy()`, else right before `.numpy()`.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.names.imports_torch:
            return
        for scope in file_model.scopes:
            calls = [c for c in scope.calls if c.method == "numpy" and isinstance(c.node.func, cst.Attribute)]
            if not calls or not known_grad_scope(file_model, scope):
                continue
            backprops = bool(file_model.differentiations_in(scope))
            if not backprops and file_freezes(file_model):
                continue
            starts = _statement_orders(scope)
            taint = file_model.taint(scope)
            for call in calls:
                if call.node.args or file_model.grad_at(call.site) is not GradMode.GRAD:
                    continue  # numpy(force=True) detaches itself
                order = min(call.order, starts.get(id(call.site.stmt), call.order))
                func = call.node.func
                assert isinstance(func, cst.Attribute)  # as ``calls`` picked them
                if taint.carries_graph(func.value, order):
                    yield self.report(call.node, fix=_fix(call.node))

    valid = (
        """\
import torch


def train_step(model, x, y, optimizer, criterion, history):
    optimizer.zero_grad()
    logits = model(x)
    loss = criterion(logits, y)
    loss.backward()
    optimizer.step()
    history.append(logits.detach().softmax(-1).cpu().numpy())
""",
        """\
import torch

model = torch.nn.Linear(4, 2)
x = torch.randn(8, 4)
with torch.no_grad():
    out = model(x)
print(out.numpy())
""",
        """\
import torch


def train_step(model, x, y, optimizer, criterion):
    optimizer.zero_grad()
    logits = model(x)
    criterion(logits, y).backward()
    optimizer.step()
    return (logits.argmax(1) == y).cpu().numpy()
""",
    )
    invalid = (
        """\
import torch

model = torch.nn.Linear(4, 2)
x = torch.randn(8, 4)
out = model(x)
print(out.numpy())  # expect: TL402
""",
        """\
import torch


def train_step(model, x, y, optimizer, criterion, history):
    optimizer.zero_grad()
    logits = model(x)
    loss = criterion(logits, y)
    loss.backward()
    optimizer.step()
    history.append(logits.softmax(-1).cpu().numpy())  # expect: TL402
""",
    )


def _statement_orders(scope: Scope) -> dict:
    """The order of each assignment statement: ``out = out.cpu().numpy()`` reads
    ``out`` as it was before the statement rebinds it."""
    return {id(a.node): a.order for a in scope.assignments}
