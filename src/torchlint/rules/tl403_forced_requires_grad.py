"""TL403: forcing ``requires_grad`` on a computed loss or model output hides a broken graph."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Tuple

import libcst as cst

from torchlint.model import FileModel
from torchlint.model.expr import dotted, keyword, literal_bool, positional
from torchlint.model.leaves import is_leaf_factory, produced_by_graph_call, reaching_value, wants_its_gradient
from torchlint.model.vocab import is_model_name, tokens
from torchlint.needs import RequiresGradForcedOnAResult
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.rule import Finding

# Loss-named things that are not a loss value: the function, its weight, a logger.
_NOT_A_LOSS_VALUE = frozenset(
    "fn func function fns module modules layer criterion crit weight weights scale scaler meter "
    "meters history hist list dict log logs name names type types cfg config configs kwargs args "
    "class cls obj".split()
)


def is_loss_value_name(path: str) -> bool:
    """``loss``, ``d_loss``, ``total_loss``, ``lossD``; not ``loss_fn`` or ``loss_weights``."""
    toks = tokens(path.rsplit(".", 1)[-1])
    has_loss = any(t in ("loss", "losses") or t.endswith("loss") for t in toks)
    return has_loss and not any(t in _NOT_A_LOSS_VALUE for t in toks)


def _forced_on(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The tensor a statement forces to require grad, or None."""
    if isinstance(node, cst.Assign):
        if literal_bool(node.value) is not True:
            return None
        for t in node.targets:
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad":
                return t.target.value
        return None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "requires_grad_":
        flag = positional(node, 0) or keyword(node, "requires_grad")
        if flag is None or literal_bool(flag) is True:
            return node.func.value
    return None


class ForcedRequiresGrad(Rule):
    code = "TL403"
    name = "forced-requires-grad"
    message = (
        "requires_grad forced on a computed loss or model output hides a broken graph and nothing "
        "trains; remove it and find where the graph is cut (detach, item, numpy, no_grad)"
    )
    torch_programs_only = True
    needs = RequiresGradForcedOnAResult()

    docs = """
## What it does
Finds `loss.requires_grad = True`, `loss.requires_grad_()` and
`loss.requires_grad_(True)` on a value computed by a loss or a forward pass:
a name bound to `criterion(...)`, `F.mse_loss(...)`, `model(x)` (maybe
reduced with `.mean()`, `.sum()`, moved with `.to()`), or a loss-named value
(`loss`, `d_loss`, `total_loss`) computed in the same function.

## Why is this bad
A loss computed from the model's parameters already requires grad. When it
does not, the graph was cut on the way: a `.detach()`, `.item()`,
`.numpy()`, `torch.tensor(value)`, a `no_grad()` block or a frozen model.
`loss.backward()` then fails with `element 0 of tensors does not require
grad`, and forcing `requires_grad = True` only silences that error:
`backward()` now runs and computes nothing for the model, so the optimizer
never changes a parameter. On a loss that does have a graph the line raises
(`you can only change requires_grad flags of leaf variables`) or, with
`requires_grad_()`, does nothing.

Not reported: `requires_grad` on inputs and data (function parameters, loop
variables), on leaves created by `torch.zeros/randn/tensor/empty/...`, on
`.detach()`ed or `.clone()`d copies of an output, on parameters, and on any
tensor the code differentiates with respect to (it reads `x.grad` or passes
`x` as `inputs` to `torch.autograd.grad`: saliency maps, adversarial
attacks, WGAN-GP interpolates, feature gradients).

## Example
```python
with torch.no_grad():
    out = model(x)
loss = criterion(out, y)
loss.requires_grad = True
loss.backward()
optimizer.step()
```

## Use instead
```python
out = model(x)
loss = criterion(out, y)
loss.backward()
optimizer.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for scope in file_model.scopes:
            for node, subject, order in self._sites(scope):
                if self._computed(file_model, scope, subject, order):
                    yield self.report(node)

    @staticmethod
    def _sites(scope: Scope) -> Iterator[Tuple[cst.CSTNode, cst.BaseExpression, int]]:
        for a in scope.assignments:
            if a.kind == "assign":
                subject = _forced_on(a.node)
                if subject is not None:
                    yield a.node, subject, a.order
        for call in scope.calls:
            subject = _forced_on(call.node)
            if subject is not None:
                yield call.node, subject, call.order

    @staticmethod
    def _computed(file_model: FileModel, scope: Scope, subject: cst.BaseExpression, order: int) -> bool:
        path = dotted(subject)
        if path is None:  # criterion(out, y).requires_grad_()
            return produced_by_graph_call(file_model, subject)
        if is_model_name(path.rsplit(".", 1)[-1]) or wants_its_gradient(file_model, scope, path):
            return False  # ``model.requires_grad_()`` unfreezes a module
        reaching = reaching_value(file_model, scope, path, order)
        if reaching is None or reaching[0].kind != "assign":
            return False  # a parameter, a loop variable, state set elsewhere
        value = reaching[1]
        if produced_by_graph_call(file_model, value):
            return True
        return is_loss_value_name(path) and not is_leaf_factory(file_model, value)

    valid = (
        """\
import torch


def saliency(model, image, label):
    image = image.clone()
    image.requires_grad_(True)
    score = model(image)[0, label]
    score.backward()
    return image.grad.abs().amax(dim=1)
""",
        """\
import torch

w = torch.zeros(3)
w.requires_grad = True
x, y = torch.randn(8, 3), torch.randn(8)
loss = ((x @ w - y) ** 2).mean()
loss.backward()
""",
    )
    invalid = (
        """\
import torch


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.requires_grad = True  # expect: TL403
        loss.backward()
        optimizer.step()
""",
        """\
import torch
import torch.nn.functional as F


def train_step(model, x, y, optimizer):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x).detach(), y)
    loss.requires_grad_()  # expect: TL403
    loss.backward()
    optimizer.step()
""",
        """\
import torch


def distil(student, teacher, x, optimizer):
    with torch.no_grad():
        out, target = student(x), teacher(x)
    out.requires_grad = True  # expect: TL403
    torch.nn.functional.mse_loss(out, target).backward()
    optimizer.step()
""",
    )
