"""TL506: ``p.require_grad = False`` makes a new attribute; nothing is frozen."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import libcst as cst

from torchlint.diagnostic import Applicability
from torchlint.model import FileModel
from torchlint.model.expr import literal_bool
from torchlint.model.parameters import is_leaf, is_tensor
from torchlint.needs import Text
from torchlint.rule import Fix, Rule
from torchlint.text_checks import GRAD_ATTRIBUTE_HINT, assigns_misspelled_grad_attribute, intended_attribute

if TYPE_CHECKING:
    from torchlint.model.records import Assignment
    from torchlint.rule import Finding


def _attribute_targets(targets: Iterable[cst.BaseExpression]) -> Iterator[cst.Attribute]:
    for target in targets:
        if isinstance(target, cst.Attribute):
            yield target
        elif isinstance(target, (cst.Tuple, cst.List)):
            yield from _attribute_targets(el.value for el in target.elements)


class MisspelledGradAttribute(Rule):
    code = "TL506"
    name = "misspelled-grad-attribute"
    message = (
        "misspelled autograd attribute: assigning it only adds a Python attribute to the tensor, so "
        "nothing is frozen or unfrozen; spell it `requires_grad` (or call `retain_grad()`)"
    )
    fix_safety = "safe"
    needs = Text(GRAD_ATTRIBUTE_HINT)
    text_check = assigns_misspelled_grad_attribute

    docs = """
## What it does
Finds an assignment to a misspelled autograd attribute of a tensor or a
parameter: `p.require_grad = False`, `p.requires_grads = False`,
`x.requiresGrad = True`, `x.requires_gradient = True`, `p.requires_grad_ =
False` (the method's name), one-typo spellings such as `reqiures_grad`, and
`h.retain_grad = True` (a method assigned as if it were a flag).

## Why is this bad
A tensor accepts any new Python attribute, so the misspelled assignment
runs without a word and changes nothing autograd reads. The layers meant to
be frozen keep training (and the optimizer keeps updating them); the input
meant for a saliency map or an adversarial attack gets no `.grad`; the
intermediate whose gradient was to be kept has none. Assigning the real
read-only attributes (`grad_fn`, `is_leaf`, `retains_grad`) raises, so only
these spellings fail silently.

Only assignments to something that is surely a tensor are reported: a loop
variable over `model.parameters()` or `named_parameters()`, a module's
`.weight`/`.bias`, a name bound to `nn.Parameter(...)`, a tensor factory,
a forward pass, a loss or a torch operation on a tensor, or a function
argument the function uses as a tensor. A class's own flag
(`self.require_grad = require_grad` in a module's `__init__`), a config
object (`args.requires_grads = True`) and private names (`_requires_grad`)
are not typos. `grad` look-alikes (`p.grads`, `p.gradient`) are left
alone: they are common names for one's own bookkeeping.

## Example
```python
for param in model.backbone.parameters():
    param.require_grad = False
optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
```

## Use instead
```python
for param in model.backbone.parameters():
    param.requires_grad = False
optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
```

## Fix safety
The fix writes the name the code meant: `requires_grad`. It is safe on a
surely leaf tensor (a parameter, a tensor factory's result, a
`.detach()`ed copy), whose flag can be set, and unsafe on other tensors,
where the corrected line may now raise: torch refuses to change
`requires_grad` on a computed tensor. `x.retain_grad = True` becomes `x.retain_grad()` (unsafe: it
raises on a tensor that does not require grad); with another value it is
reported without a fix.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if not file_model.is_torch_code:
            return
        for a in file_model.assignments:
            if a.kind != "assign":
                continue
            for target in _attribute_targets(a.targets):
                intended = intended_attribute(target.attr.value)
                if intended is None:
                    continue
                receiver, scope, order = target.value, a.site.scope, a.order
                if not is_tensor(file_model, scope, receiver, order):
                    continue
                fix: Optional[Fix]
                if intended == "requires_grad":
                    leaf = is_leaf(file_model, scope, receiver, order)
                    fix = Fix(f"spell it `{intended}`", ((target.attr, cst.Name(intended)),),
                              applicability=Applicability.SAFE if leaf else Applicability.UNSAFE)
                else:
                    fix = self._retain_fix(a, target)
                yield self.report(target, fix=fix)

    @staticmethod
    def _retain_fix(assignment: Assignment, target: cst.Attribute) -> Optional[Fix]:
        """``h.retain_grad = True`` -> ``h.retain_grad()``, for a one-target statement."""
        node = assignment.node
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and literal_bool(node.value) is True):
            return None
        call = cst.Expr(cst.Call(func=target.with_changes(attr=cst.Name("retain_grad"))),
                        semicolon=node.semicolon)
        return Fix("call `retain_grad()`", ((node, call),), applicability=Applicability.UNSAFE)

    valid = (
        """\
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, dim, require_grad=True):
        super().__init__()
        self.require_grad = require_grad
        self.proj = nn.Linear(dim, dim)
        for p in self.proj.parameters():
            p.requires_grad = require_grad

    def forward(self, x):
        return self.proj(x)
""",
        """\
import argparse

import torch

parser = argparse.ArgumentParser()
args = parser.parse_args()
args.requires_grads = True
args.retain_grad = False


def track(model, history):
    for p in model.parameters():
        p.grads = []
        p._requires_grad = p.requires_grad
    history.require_grad = True
""",
    )
    invalid = (
        """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
for param in model[0].parameters():
    param.require_grad = False  # expect: TL506
for name, param in model.named_parameters():
    if name.startswith("2."):
        param.requires_grads = True  # expect: TL506
model[2].bias.requiresGrad = False  # expect: TL506
""",
        """\
import torch


def saliency(model, image, label):
    image = image.clone()
    image.requires_gradient = True  # expect: TL506
    hidden = model.features(image)
    hidden.retain_grad = True  # expect: TL506
    score = model.head(hidden)[0, label]
    score.backward()
    return image.grad
""",
    )
