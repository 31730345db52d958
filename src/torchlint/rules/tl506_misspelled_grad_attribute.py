"""TL506: ``p.require_grad = False`` makes a new attribute; nothing is frozen."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator, Optional

import libcst as cst

from torchlint.diagnostic import Applicability
from torchlint.model import FileModel
from torchlint.model.expr import literal_bool
from torchlint.model.parameters import is_leaf, is_tensor
from torchlint.rule import Fix, Rule
from torchlint.tree_gate import TreeIndex

# Word forms of the two names, after lower-casing and dropping underscores.
_GRAD_SUFFIX = re.compile(r"([a-z]+?)(?:grad|grads|gradient|gradients)")
_REQUIRES_FORMS = frozenset(("require", "requires", "required", "requiring"))
_RETAIN_FORMS = frozenset(("retain", "retains", "retained", "retaining"))
# Real attributes: ``requires_grad`` is the flag; assigning ``retains_grad``,
# ``grad_fn`` or ``is_leaf`` raises (read-only), so no typo of theirs goes unnoticed.
_REAL = frozenset(("requires_grad", "retains_grad"))
# Only names that keep ``grad`` or ``requi`` (in one of the usual cases) are looked at.
_HINTS = ("grad", "Grad", "GRAD", "requi", "Requi", "REQUI")
_HINT = "(?:" + "|".join(_HINTS) + ")"
_SPACE = " \t\r\n\\"


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _assigned_hinted_names(source: str) -> Iterator[str]:
    """Each attribute name holding a hint that the text assigns (``x.name =``, ``x.name, y.name =``,
    ``x.name: bool =``, ``[x.name] =``). ``str.find`` for the hints and a look either side:
    a regex starting with six alternatives scans a notebook's outputs far slower."""
    seen = set()
    for hint in _HINTS:
        at = source.find(hint)
        while at >= 0:
            start, end = at, at + len(hint)
            while start > 0 and _is_word(source[start - 1]):
                start -= 1
            while end < len(source) and _is_word(source[end]):
                end += 1
            if start not in seen and _is_assigned_attribute(source, start, end):
                seen.add(start)
                yield source[start:end]
            at = source.find(hint, end)


def _is_assigned_attribute(source: str, start: int, end: int) -> bool:
    before = start - 1
    while before >= 0 and source[before] in _SPACE:
        before -= 1
    if before < 0 or source[before] != ".":
        return False
    after = end
    while after < len(source) and source[after] in _SPACE:
        after += 1
    follows = source[after:after + 2]
    return follows[:1] in (",", ":", ")", "]") or (follows[:1] == "=" and follows != "==")


def _osa(a: str, b: str) -> int:
    """Edit distance counting a swap of neighbours as one edit (optimal string alignment)."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


@lru_cache(maxsize=1024)
def intended_attribute(name: str) -> Optional[str]:
    """``requires_grad`` for ``require_grad``, ``requires_grads``, ``requiresGrad``,
    ``requires_gradient``, ``requires_grad_`` (the method's name) and one-typo spellings
    (``reqiures_grad``); ``retain_grad`` for ``retain_grad`` itself (a method, not a
    flag) and its word forms. None for real and private names and everything else."""
    if name in _REAL or name.startswith("_") or not re.search(_HINT, name):
        return None
    flat = name.lower().replace("_", "")
    match = _GRAD_SUFFIX.fullmatch(flat)
    if match is not None:
        stem = match.group(1)
        if stem in _REQUIRES_FORMS or min(_osa(stem, "requires"), _osa(stem, "require")) <= 1:
            return "requires_grad"
        if stem in _RETAIN_FORMS:
            return "retain_grad"
    if _osa(flat, "requiresgrad") <= 1:  # a typo inside "grad": requires_gard
        return "requires_grad"
    return None


def _attribute_targets(targets) -> Iterator[cst.Attribute]:
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
    gate = (_HINT,)

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        return any(map(intended_attribute, _assigned_hinted_names(tree_index.source)))

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

    def check(self, file_model: FileModel):
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
                if intended == "requires_grad":
                    leaf = is_leaf(file_model, scope, receiver, order)
                    fix = Fix(f"spell it `{intended}`", ((target.attr, cst.Name(intended)),),
                              applicability=Applicability.SAFE if leaf else Applicability.UNSAFE)
                else:
                    fix = self._retain_fix(a, target)
                yield self.report(target, fix=fix)

    @staticmethod
    def _retain_fix(assignment, target: cst.Attribute) -> Optional[Fix]:
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
