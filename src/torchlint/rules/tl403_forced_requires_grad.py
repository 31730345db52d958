"""TL403: forcing ``requires_grad`` on a computed loss or model output hides a broken graph."""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import libcst as cst

from torchlint.tree_gate import TreeIndex
from torchlint.model import FileModel
from torchlint import tree_gate
from torchlint.model.ast_reading import flat_targets
from torchlint.model.expr import dotted, keyword, literal_bool, positional
from torchlint.model.leaves import is_leaf_factory, produced_by_graph_call, reaching_value, wants_its_gradient
from torchlint.model.vocab import LEAF_WRAPPERS, SHAPE_METHODS, TENSOR_FACTORIES, is_model_name, tokens
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


# -- the same question of the stdlib ast, for the tree gate: it may say yes more often

_NO_GRAPH_CALLS = TENSOR_FACTORIES | LEAF_WRAPPERS


def _forced_in_tree(node: ast.AST) -> Optional[ast.expr]:
    """The tensor of ``t.requires_grad = True`` or ``t.requires_grad_()``/``(True)``, else None."""
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad":
                return target.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        flag = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
        if flag is None or (isinstance(flag, ast.Constant) and flag.value is True):
            return node.func.value
    return None


def _computed_in_tree(nodes: list) -> Callable[..., Any]:
    """Whether a forced tensor may be computed: bound in ``nodes`` (its scope) from a call
    before it is forced (``reaching_value`` reads the last binding before; any earlier one
    from a call is enough here), named like a loss and bound before, or a call itself."""
    bindings: Dict[Optional[str], List[Tuple[Tuple[int, int], bool]]] = {}  # path -> [(position, may be computed)]
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            computes = _may_compute(node.value) or (
                isinstance(node.value, (ast.Tuple, ast.List)) and any(map(_may_compute, node.value.elts)))
            for target in getattr(node, "targets", [getattr(node, "target", None)]):
                for t in flat_targets(target):
                    bindings.setdefault(tree_gate.dotted(t), []).append((_position(node), computes))

    def computed(forcing: Union[ast.stmt, ast.expr], target: ast.expr) -> bool:
        path = tree_gate.dotted(target)
        if path is None:
            return _may_compute(target)
        loss_named = "loss" in path.lower()
        at = _position(forcing)
        return any(where < at and (computes or loss_named) for where, computes in bindings.get(path, ()))
    return computed


def _position(node: Union[ast.stmt, ast.expr]) -> Tuple[int, int]:
    return node.lineno, node.col_offset


def _may_compute(expr: ast.expr) -> bool:
    """Could ``expr`` be a forward pass or a loss call, maybe reduced or moved, as
    ``produced_by_graph_call`` accepts: a call with an input, not a tensor factory
    (``torch.zeros(n)``) or leaf wrapper, before shape methods only."""
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in SHAPE_METHODS:
        expr = expr.func.value
    return isinstance(expr, ast.Call) and bool(expr.args) and tree_gate.called_name(expr) not in _NO_GRAPH_CALLS


class ForcedRequiresGrad(Rule):
    code = "TL403"
    name = "forced-requires-grad"
    message = (
        "requires_grad forced on a computed loss or model output hides a broken graph and nothing "
        "trains; remove it and find where the graph is cut (detach, item, numpy, no_grad)"
    )
    torch_programs_only = True
    # Only forcing counts: ``requires_grad = True``, ``requires_grad_()`` or ``requires_grad_(True)``.
    gate = (r"requires_grad\s*=\s*True|requires_grad_\(\s*(?:(?:requires_grad\s*=\s*)?True\s*)?\)",)

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        """``x.requires_grad = True`` / ``x.requires_grad_()`` where ``x`` is a call's result:
        bound earlier in the same function from a call, or named like a loss, or the call itself."""
        for body in tree_index.bodies_mentioning("requires_grad"):
            nodes = tree_index.nodes_of(body)
            forced = [(node, target) for node in nodes for target in (_forced_in_tree(node),) if target is not None]
            if forced:
                computed = _computed_in_tree(nodes)
                if any(computed(node, target) for node, target in forced):
                    return True
        return False

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
        reaching = reaching_value(scope, path, order)
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
