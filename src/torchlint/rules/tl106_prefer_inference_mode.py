"""TL106 (opt-in): serving code uses no_grad() where inference_mode() is faster."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Set, Tuple
import libcst as cst

from torchlint.model import FileModel
from torchlint.model.expr import bound_paths, dotted, root_name
from torchlint.model.vocab import GRAD_FREE_HOOKS, tokens
from torchlint.model.walk import walk
from torchlint.needs import Text
from torchlint.rule import Fix, Rule

if TYPE_CHECKING:
    from torchlint.model.records import Scope
    from torchlint.rule import Finding

_NO_GRAD = frozenset(("torch.no_grad", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"))
# Functions that serve predictions: ``predict``, ``run_inference``, TorchServe's ``handle``.
_SERVING_FUNCTION_WORDS = frozenset("predict prediction predictions infer inference serve serving handle".split())
# Classes that train or evaluate during training: their no_grad results feed training code.
_TRAINING_CLASS_WORDS = frozenset("trainer callback loop strategy learner algorithm".split())
# Classes whose ``__call__`` serves predictions.
_SERVING_CLASS_WORDS = frozenset("predictor pipeline handler service server inferencer inference serving".split())


class PreferInferenceMode(Rule):
    code = "TL106"
    name = "prefer-inference-mode"
    message = (
        "no_grad() in inference-only serving code; torch.inference_mode() skips more autograd "
        "bookkeeping (version counters, view tracking) and is faster"
    )
    default = False
    fix_safety = "unsafe"
    torch_programs_only = True
    needs = Text(r"no_grad") & Text(r"(?i)predict|infer|serv|handle|__call__")
    docs = """
## What it does
Finds `torch.no_grad()` (as a context manager or decorator) in functions that
serve predictions: named like `predict`, `infer`/`inference`, `serve` or
`handle` (TorchServe handlers), or `__call__` of a `Predictor`, `Pipeline`,
`Handler` or `Service` class, in a file that never trains (no `backward()`,
`optimizer.step()`, `autograd.grad` or `requires_grad_`).

## Why is this bad
`torch.inference_mode()` disables autograd like `no_grad()` and also skips
version-counter bumps and view tracking on the tensors it creates. For
serving, where outputs are never differentiated, it is the same result for
less overhead (PyTorch recommends it for inference).

It is opt-in because the switch is not always free: tensors created under
`inference_mode` cannot later be saved for a backward pass or modified in
place outside it. So torchlint leaves alone files that train, methods of
trainer and callback classes and evaluation hooks (`prediction_step`), code
that stores tensors on `self` under `no_grad` (they outlive the region), and
a `with` block whose function modifies its results in place after the block
(or a decorated function whose same-module callers do).

## Example
```python
class Predictor:
    def __call__(self, images):
        with torch.no_grad():
            return self.model(images).softmax(dim=1)
```

## Use instead
```python
class Predictor:
    def __call__(self, images):
        with torch.inference_mode():
            return self.model(images).softmax(dim=1)
```

## Fix safety
The fix renames `no_grad` to `inference_mode` (keeping the alias of
`torch` the file uses). It is unsafe: a caller in another module that
modifies the returned tensors in place, or uses them in a loss it
backpropagates, would now raise.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if _trains(file_model):
            return
        for scope in file_model.scopes:
            if not _serves(file_model, scope):
                continue
            for node, region in _no_grad_uses(file_model, scope):
                if _keeps_state(file_model, scope, region) or _inplace_after(file_model, scope, region):
                    continue
                yield self.report(node, fix=_rename(file_model, node))

    valid = (
        """\
import torch


@torch.inference_mode()
def predict(model, images):
    model.eval()
    return model(images).argmax(1)
""",
        """\
import torch


@torch.no_grad()
def predict(model, images):
    model.eval()
    return model(images).argmax(1)


def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
""",
    )
    invalid = (
        """\
import torch


class Predictor:
    def __init__(self, model):
        self.model = model.eval()

    def __call__(self, batch):
        with torch.no_grad():  # expect: TL106
            return self.model(batch).softmax(-1)
""",
        """\
import torch


@torch.no_grad()  # expect: TL106
def predict(model, images):
    model.eval()
    return model(images).argmax(1)
""",
    )


def _trains(file_model: FileModel) -> bool:
    return any(
        file_model.needs_autograd(c) or file_model.clears_grad(c)
        for c in file_model.calls
    )


def _serves(file_model: FileModel, scope: Scope) -> bool:
    if scope.is_module or scope.name in GRAD_FREE_HOOKS:
        return False  # evaluation hooks of a trainer, not serving
    cls_words = set(tokens(file_model.enclosing_class(scope) or ""))
    if cls_words & _TRAINING_CLASS_WORDS:
        return False
    if _SERVING_FUNCTION_WORDS & set(tokens(scope.name)):
        return True
    cls = file_model.enclosing_class(scope)
    return scope.name == "__call__" and cls is not None and bool(_SERVING_CLASS_WORDS & set(tokens(cls)))


def _keeps_state(file_model: FileModel, scope: Scope, region: Optional[cst.With]) -> bool:
    """The region stores tensors on ``self``: they would outlive inference mode."""
    ids = _node_ids(region) if region is not None else None
    for a in scope.assignments:
        if ids is not None and id(a.node) not in ids:
            continue
        for t in a.targets:
            if root_name(t) == "self" or any(p.startswith("self.") for p in bound_paths(t)):
                return True
    return False


def _is_no_grad(file_model: FileModel, expr: cst.BaseExpression) -> bool:
    func = expr.func if isinstance(expr, cst.Call) else expr
    return file_model.names.qualify(dotted(func)) in _NO_GRAD


def _no_grad_uses(file_model: FileModel, scope: Scope) -> Iterator[Tuple[cst.BaseExpression, Optional[cst.With]]]:
    """``(node, region)`` for each no_grad decorator (region: the function) or with item (the with)."""
    decorators = scope.node.decorators if isinstance(scope.node, cst.FunctionDef) else ()  # (asked of functions)
    for decorator in decorators:
        if _is_no_grad(file_model, decorator.decorator):
            yield decorator.decorator, None
    for call in scope.calls:
        stmt = call.site.stmt
        if isinstance(stmt, cst.With) and any(item.item is call.node for item in stmt.items):
            if _is_no_grad(file_model, call.node):
                yield call.node, stmt


def _inplace_after(file_model: FileModel, scope: Scope, region: Optional[cst.With]) -> bool:
    """Tensors made under inference_mode cannot be changed in place outside it.

    Looks for in-place changes, after the region, of the names a ``with``
    block binds, and of the names same-module callers bind to the
    function's result.
    """
    uses = [(c.scope, c.order, _roots(_bound_by(c.site.stmt))) for c in file_model.callers.get(scope, ())]
    if region is not None:
        ids = _node_ids(region)
        inside = [a for a in scope.assignments if id(a.node) in ids]
        end = max([a.order for a in inside] + [c.order for c in scope.calls if id(c.node) in ids], default=0)
        uses.append((scope, end, _roots(p for a in inside for t in a.targets for p in bound_paths(t))))
    for site, after, names in uses:
        if any(a.kind == "aug" and a.order > after and root_name(a.targets[0]) in names for a in site.assignments):
            return True
        if any(c.order > after and _inplace_method(c.method) and root_name(c.node.func) in names
               for c in site.calls):
            return True
    return False


def _bound_by(stmt: cst.CSTNode) -> list:
    if isinstance(stmt, cst.Assign):
        return [p for t in stmt.targets for p in bound_paths(t.target)]
    if isinstance(stmt, cst.AnnAssign):
        return list(bound_paths(stmt.target))
    return []


def _roots(paths: Iterable[str]) -> Set[str]:
    return {p.split(".", 1)[0] for p in paths}


def _node_ids(region: cst.With) -> set:
    ids: set = set()
    walk(region, lambda n: ids.add(id(n)), lambda n: None)
    return ids


def _inplace_method(name: str) -> bool:
    return bool(name) and name.endswith("_") and not name.startswith("_")


def _rename(file_model: FileModel, node: cst.BaseExpression) -> Fix:
    """``torch.no_grad()`` -> ``torch.inference_mode()``, with the file's alias of torch."""
    func = node.func if isinstance(node, cst.Call) else node
    path = dotted(func)
    assert path is not None  # a no_grad the file names
    head = path.split(".", 1)[0]
    torch = head if file_model.names.aliases.get(head) == "torch" else file_model.names.torch_alias
    new_func = cst.Attribute(cst.Name(torch), cst.Name("inference_mode"))
    new = node.with_changes(func=new_func) if isinstance(node, cst.Call) else cst.Call(func=new_func)
    return Fix("use torch.inference_mode()", ((node, new),), imports=("torch",) if torch == "torch" else ())

