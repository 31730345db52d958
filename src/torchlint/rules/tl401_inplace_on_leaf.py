"""TL401: an in-place write to a leaf tensor that requires grad."""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Set, Tuple

import libcst as cst

from torchlint.model import FileModel, GradMode
from torchlint.model.expr import bound_paths, dotted, keyword, literal_bool, positional
from torchlint.model.leaves import (
    argument_at_calls, frozen_for, grad_switched_on, iterated_owners, known_grad_scope, loop_members,
    reads_module_binding,
)
from torchlint.model.parameters import layer_parameter
from torchlint.model.function_effects import positional_params, written_in_place
from torchlint.model.project_calls import argument, project_callee
from torchlint.model.shapes import bound_around
from torchlint.model.vocab import writes_in_place
from torchlint.needs import (
    COMPUTES_GRADIENTS, ForwardWritesSelfParameter, ImportTimeCodeWrites, ImportTimeLeafWrite,
    LeafHandedToAProjectWriter, Text,
)
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Scope, Site
    from torchlint.rule import Finding

_PARAM_ITERATORS = {"parameters": None, "named_parameters": 1}


def _makes_leaf(file_model: FileModel, value: Optional[cst.BaseExpression]) -> bool:
    """``nn.Parameter(...)``, ``torch.zeros(..., requires_grad=True)``, ``x.requires_grad_()``."""
    if not isinstance(value, cst.Call):
        return False
    callee = dotted(value.func) or ""
    if callee.rsplit(".", 1)[-1] == "Parameter":  # ``nn.Parameter(pe, requires_grad=False)`` is a constant
        return literal_bool(keyword(value, "requires_grad") or positional(value, 1)) is not False
    if isinstance(value.func, cst.Attribute) and value.func.attr.value == "requires_grad_":
        flag = value.args[0].value if value.args else None
        return (flag is None or literal_bool(flag) is True) and _is_factory(file_model, value.func.value)
    return _is_factory(file_model, value) and literal_bool(keyword(value, "requires_grad")) is True


def _is_factory(file_model: FileModel, value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and file_model.names.qualify(dotted(value.func)) is not None


def leaf_bindings(file_model: FileModel, scope: Scope) -> dict:
    """path -> [(order, is a leaf that requires grad)] for every binding in ``scope``.

    Kept in order so a write sees the binding that reaches it:
    ``x = torch.ones(2); x.add_(1); x = torch.ones(2, requires_grad=True)`` is fine.
    """
    bindings: Dict[str, List[Tuple[int, bool]]] = {}
    for a in scope.assignments:
        if a.kind == "aug" or a.kind == "del":
            continue
        leaves: Set[str] = set()
        if a.kind == "assign" and _makes_leaf(file_model, a.value):
            leaves = {p for p in map(dotted, a.targets) if p}
        elif a.kind == "for" and isinstance(a.value, cst.Call):
            leaves = _parameter_targets(a, a.value)
        for target in a.targets:
            for path in bound_paths(target):
                bindings.setdefault(path, []).append((a.order, path in leaves))
    for path, order in grad_switched_on(file_model, scope):
        bindings.setdefault(path, []).append((order, True))
    bindings = {path: sorted(seen) for path, seen in bindings.items()}
    return bindings


def _parameter_targets(a: Assignment, iterated: cst.Call) -> Set[str]:
    """``p`` in ``for p in model.parameters()`` / ``for name, p in m.named_parameters()``
    (``iterated``: the loop's ``a.value``)."""
    method = iterated.func.attr.value if isinstance(iterated.func, cst.Attribute) else None
    if method not in _PARAM_ITERATORS:
        return set()
    target = a.targets[0]
    index = _PARAM_ITERATORS[method]
    if index is not None and isinstance(target, (cst.Tuple, cst.List)):
        target = target.elements[index].value if len(target.elements) > index else None
    path = dotted(target) if target is not None else None
    return {path} if path else set()


def is_leaf_at(bindings: dict, path: str, order: int) -> bool:
    reaching = [leaf for at, leaf in bindings.get(path, ()) if at < order]
    return bool(reaching) and reaching[-1]


def class_parameters(file_model: FileModel, cls: str) -> set:
    """``self.w`` attributes the methods of ``cls`` bind to an ``nn.Parameter``, and to
    nothing else (``self.w = self.w.detach()`` elsewhere makes it unknown)."""
    flags: Dict[str, List[bool]] = {}
    for scope in file_model.scopes:
        if scope.class_name == cls:
            for path, seen in leaf_bindings(file_model, scope).items():
                if path.startswith("self."):
                    flags.setdefault(path, []).extend(leaf for _, leaf in seen)
    return {path for path, leaves in flags.items() if all(leaves)}


def _backpropagates(file_model: FileModel) -> bool:
    """Some call of the file is a backward or ``autograd.grad`` (what ``COMPUTES_GRADIENTS``
    finds in the text, or less)."""
    return any(file_model.differentiations_in(s) for s in file_model.scopes)


class _Leaves:
    """Is a path a leaf that requires grad where a write to it stands?"""

    def __init__(self, file_model: FileModel) -> None:
        self.file_model = file_model
        self._bindings: Dict[Scope, Dict[str, List[Tuple[int, bool]]]] = {}
        self._params_of: Dict[str, Set[str]] = {}
        self._module_leaves: Dict[str, bool] = {}

    def bindings(self, scope: Scope) -> dict:
        if scope not in self._bindings:
            self._bindings[scope] = leaf_bindings(self.file_model, scope)
        return self._bindings[scope]

    def class_parameters(self, scope: Scope) -> set:
        cls = self.file_model.enclosing_class(scope)
        if cls is None:
            return set()
        if cls not in self._params_of:
            self._params_of[cls] = class_parameters(self.file_model, cls)
        return self._params_of[cls]

    def requires_grad_at(self, scope: Scope, path: str, order: int, depth: int = 0, through_params: bool = True) -> bool:
        """``path`` holds a leaf that requires grad at ``order`` in ``scope``: bound there to
        one, a ``self.w = nn.Parameter(...)`` of the class, a torch.nn layer's weight or
        bias, or a parameter of the function that every call in this module binds to one
        (``init_embedding(self.emb.weight)``), unless not ``through_params``. Not when something
        may have frozen it."""
        file_model = self.file_model
        bindings = self.bindings(scope)
        if path in bindings and any(at < order for at, _ in bindings[path]):
            leaf = is_leaf_at(bindings, path, order)
        elif path in self.class_parameters(scope) and path not in bindings:
            leaf = True
        elif layer_parameter(file_model, scope, path, order):
            leaf = True
        elif reads_module_binding(scope, path.split(".", 1)[0], order):
            leaf = depth < 3 and self._module_leaf(path, depth)
        else:
            leaf = through_params and depth < 3 and path in scope.params and self._bound_to_leaves(scope, path, depth)
        if not leaf and depth < 3 and (members := loop_members(file_model, scope, path, order)) is not None:
            # ``for p in (w, b): p -= ...`` writes to each of them in turn
            leaf = any((member_path := dotted(member)) is not None
                       and self.requires_grad_at(scope, member_path, order, depth + 1, through_params)
                       for member in members[1])
        return leaf and not frozen_for(file_model, scope, order, self._owners(scope, path, order))

    def _module_leaf(self, path: str, depth: int) -> bool:
        """Module state (``W = torch.randn(3, requires_grad=True)``, ``head = nn.Linear(4, 2)``
        for ``head.bias``) holds a leaf that requires grad whenever a function may run: at
        every module-level call after the module binds it, and once the module has run. A
        function that rebinds it through ``global`` must bind a leaf too."""
        if path not in self._module_leaves:
            self._module_leaves[path] = self._compute_module_leaf(path, depth)
        return self._module_leaves[path]

    def _compute_module_leaf(self, path: str, depth: int) -> bool:
        module = self.file_model.module_scope
        root = path.split(".", 1)[0]
        for scope in self.file_model.scopes:
            rebound = self.bindings(scope).get(root) if root in scope.global_names else None
            if rebound and (path != root or not all(leaf for _, leaf in rebound)):
                return False  # ``global W; W = W - lr * W.grad`` elsewhere: no longer a leaf
        module_bindings = self.bindings(module)
        bound = sorted(at for key in {root, path} for at, _ in module_bindings.get(key, ()))
        if not bound:
            return False
        # The answer changes only where the module binds the name: one point per stretch
        # between bindings that holds a call, the last (which sees the most freezes).
        points: Dict[int, int] = {}
        for order in [c.order for c in module.calls if c.order > bound[0]] + [module.end]:
            points[bisect.bisect_left(bound, order)] = order
        return all(self.requires_grad_at(module, path, order, depth + 1) for order in points.values())

    def _bound_to_leaves(self, scope: Scope, name: str, depth: int) -> bool:
        calls = argument_at_calls(self.file_model, scope, name)
        return bool(calls) and all(
            value is not None and (path := dotted(value)) is not None
            and self.requires_grad_at(call.scope, path, call.order, depth + 1)
            for call, value in calls
        )

    def _owners(self, scope: Scope, path: str, order: int) -> List[str]:
        """``path`` and what it belongs to: ``net`` for ``p`` of ``for p in net.parameters()``."""
        return [path] + (iterated_owners(self.file_model, scope, path, order) if "." not in path else [])


class InplaceOnLeaf(Rule):
    code = "TL401"
    name = "inplace-on-leaf"
    message = (
        "in-place operation on a leaf tensor that requires grad raises at run time; do it "
        "under `with torch.no_grad():` (or on a copy)"
    )
    torch_programs_only = True
    asked_when_parsed = True  # its check costs more than its question where that says no
    # A leaf and an in-place write, spelled; then code whose grad mode is known to write: module-level
    # code, functions that compute gradients, a model's forward, and what import-time code reaches
    # (``model = Net()`` runs ``Net.__init__``), or a project helper handed a leaf.
    needs = (Text(r"requires_grad|Parameter\(|parameters\(\)|\.weight\b|\.bias\b")
             & Text(r"_\(|\+=|-=|\*=|/=|\]\s*=[^=]")
             & (COMPUTES_GRADIENTS | ImportTimeLeafWrite() | ImportTimeCodeWrites() | ForwardWritesSelfParameter()
                | LeafHandedToAProjectWriter()))

    docs = """
## What it does
Finds in-place writes (`w.add_(...)`, `w -= lr * w.grad`, `w[0] = 0`,
`p.clamp_(...)`, `E[:, 0::2] = ...`) to leaf tensors that require grad:
tensors created with `requires_grad=True`, `nn.Parameter`s, the parameters of
a model, and the `weight`/`bias` of torch.nn layers built in the file
(`self.fc = nn.Linear(...)`), outside `torch.no_grad()`, in code that runs
with grad enabled: module-level script code, a function that also calls
`backward()`, a model's `forward`, and code only reached from such code,
such as the `__init__` of a class built there (`model = Net()`) and helpers
it calls. A helper's parameter counts as a leaf when every call of the
helper in the file passes one (`init_table(self.pos.weight)`), and a name a
function reads from the module (`W = torch.randn(3, requires_grad=True)` or
`head = nn.Linear(4, 2)` at module level, written in `train_step`, with or
without `global W`) when the module holds a leaf under that name wherever
its code may call the function, and no `global` rebinding elsewhere makes it
something else. The parameters of a model the file builds count too:
`model.fc.weight` and `model.scale` of `model = Net()` for a model class of
the file whose `__init__` binds `self.fc = nn.Linear(...)` and `self.scale =
nn.Parameter(...)` (through the models it holds in turn, `model.encoder.proj.bias`),
and the `weight`/`bias` of a torchvision classifier (`resnet18().fc.weight`).
A function that calls a helper of the file that backpropagates
(`backprop(loss)`) records as much as one that calls `backward()` itself.

A helper of another module of the project (`from utils import init_`) that
writes one of its parameters in place with grad on (`t.mul_(scale)`,
`t -= ...`, `t[0] = 0`, not under `no_grad` and never bound to anything
else there) is reported at the call that hands it such a leaf, in
module-level code or in a file that backpropagates: `init_(w)`,
`init_(layer.weight)`, `init_(p)` in a loop over `model.parameters()`.
The project index reads the helper (`from utils import *` too), and the
call's result is cached until that module changes.

## Why is this bad
Autograd cannot track an in-place change of a leaf it will accumulate a
gradient into: the call raises `RuntimeError: a leaf Variable that requires
grad is being used in an in-place operation` (or "a view of a leaf Variable"
for a slice). The usual cause is a manual update (SGD by hand, weight
clipping, pruning, re-initialisation, a fixed sinusoidal table written into
an `nn.Embedding`) outside `torch.no_grad()`. Working around it with `.data`
hides the update from autograd's version checks.

Not reported: the same writes under `torch.no_grad()` (at the write or around
the call of the helper that makes it) or in a function decorated with it,
`nn.init.*_` functions (they use `no_grad` inside), writes to `.grad` or
`.data`, buffers (a batch norm's `running_mean`, `running_var`,
`num_batches_tracked`), `nn.Parameter(..., requires_grad=False)`,
`nn.Embedding.from_pretrained` (frozen by default), tensors and models whose
`requires_grad` was turned off first (`model.requires_grad_(False)`, or `p.requires_grad
= False` in a loop over `model.parameters()`), in-place ops on tensors that do not
require grad, and unit tests. Writes in functions whose callers torchlint
cannot see (weight init passed to `model.apply`, optimizer `step` methods, a
class never built in the file) are not reported either: whether grad is
enabled there depends on those callers.

## Example
```python
w = torch.randn(3, requires_grad=True)
for x, y in data:
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    w -= 0.1 * w.grad
    w.grad.zero_()
```

## Use instead
```python
w = torch.randn(3, requires_grad=True)
for x, y in data:
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        leaves = _Leaves(file_model)
        for scope in file_model.scopes:
            if not self._grad_enabled_code(file_model, scope):
                continue
            for node, path, site in self._writes(scope):
                if path is None or file_model.grad_at(site) is not GradMode.GRAD:
                    continue
                if leaves.requires_grad_at(scope, path, site.order) and (
                        path.split(".", 1)[0] not in bound_around(file_model, node)):
                    yield self.report(node)
            yield from self._handed_to_the_project(file_model, scope, leaves)

    def _handed_to_the_project(self, file_model: FileModel, scope: Scope, leaves: _Leaves) -> Iterator[Finding]:
        """``init_(w)`` where ``init_``, a function of another module of the project, writes that
        parameter in place (``function_effects.written_in_place``, asked of that module's model):
        reported at the call, which is where the leaf is handed over and where the fix goes. In
        module-level code and in files that backpropagate (scripts and training code)."""
        if not (scope.is_module or file_model.derived(_backpropagates)):
            return  # library code hands its own tensors to its helpers: only scripts and training code
        for call in scope.calls:
            callee = project_callee(file_model, call)
            if callee is None or not callee.summary.may_write_in_place or file_model.grad_at(call.site) is not GradMode.GRAD:
                continue
            params = callee.ask(positional_params) or ()
            for param in sorted(callee.ask(written_in_place) or ()):
                value = argument(call, params, param)
                path = dotted(value) if value is not None else None
                # A leaf made, built or iterated here, not one a caller hands this function: that
                # is what the tree gate reads (``_hands_to_a_project_writer``).
                if path and leaves.requires_grad_at(scope, path, call.order, through_params=False) and (
                        path.split(".", 1)[0] not in bound_around(file_model, call.node)):
                    yield self.report(call.node, (
                        f"`{call.callee}` writes its parameter `{param}` in place and this call hands it a leaf "
                        f"tensor that requires grad, which raises at run time; call it under "
                        f"`with torch.no_grad():` (or hand it a copy)"))
                    break

    @staticmethod
    def _grad_enabled_code(file_model: FileModel, scope: Scope) -> bool:
        """Code whose grad mode we know: module level, a function that computes gradients,
        a model's ``forward``, or code only reached from such code (``__init__`` of a
        class built there included)."""
        return known_grad_scope(file_model, scope, forward_records=True)

    @staticmethod
    def _writes(scope: Scope) -> Iterator[Tuple[cst.CSTNode, Optional[str], Site]]:
        for call in scope.calls:
            method = call.method or ""
            if call.receiver and writes_in_place(method):
                yield call.node, call.receiver, call.site
        for a in scope.assignments:
            if a.kind == "aug":
                yield a.node, dotted(a.targets[0]), a.site
            elif a.kind == "assign":
                for t in a.targets:
                    if isinstance(t, cst.Subscript):
                        yield a.node, dotted(t.value), a.site

    valid = (
        """\
import torch


def sgd_step(model, x, y, lr=0.01):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)
            p.grad = None
""",
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        with torch.no_grad():
            self.fc.bias.zero_()
""",
        """\
import torch

x = torch.randn(8, 3)
mask = torch.ones(8, 3)
mask[0] = 0
x *= mask
""",
        """\
import torch
from torch import nn


def sinusoidal_(table):
    n, dim = table.shape
    angle = torch.arange(n).unsqueeze(1) / 10000 ** (torch.arange(0, dim, 2) / dim)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle)


class Embeddings(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        with torch.no_grad():
            sinusoidal_(self.positions.weight)
        self.fixed = nn.Embedding(max_len, dim)
        self.fixed.weight.requires_grad = False
        self.fixed.weight[0] = 0
        self.pretrained = nn.Embedding.from_pretrained(torch.randn(vocab, dim))
        self.pretrained.weight[0] = 0
        self.register_buffer("table", torch.zeros(max_len, dim))
        self.constant = nn.Parameter(torch.zeros(max_len, dim), requires_grad=False)
        self.head = nn.Linear(dim, vocab)
        nn.init.zeros_(self.head.bias)
        self.head.weight.data.normal_(0, 0.02)

    def forward(self, ids):
        self.table.mul_(0.99)
        self.constant[0] = 1
        pos = torch.arange(ids.size(1))
        return self.head(self.tokens(ids) + self.positions(pos) + self.fixed(pos) + self.table[pos])


model = Embeddings(100, 16, 32)
""",
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.fc.bias.zero_()


def ema_update(ema, model, decay=0.999):
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(decay).add_(p, alpha=1 - decay)


def fill_(t, value):
    t[:] = value


def train(model, ema, loader, lr=0.1):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
                fill_(p.grad, 0)
        ema_update(ema, model)


with torch.no_grad():
    model, ema = Net(), Net()  # built without grad: zero_() in __init__ is allowed
""",
        """\
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.bn = nn.BatchNorm1d(2)
        self.gain = nn.Parameter(torch.ones(2))
        self.frozen = nn.Linear(2, 2)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        return self.frozen(self.bn(self.fc(x))) * self.gain


model = Net()
teacher = Net()
for p in teacher.parameters():
    p.requires_grad = False


@torch.no_grad()
def shrink():
    model.fc.weight.mul_(0.5)


def reset_gain():
    model.gain.fill_(1.0)


def tidy():
    model.fc.bias.data.zero_()
    nn.init.ones_(model.gain)
    model.bn.running_mean.zero_()
    model.frozen.weight.zero_()
    teacher.fc.weight.copy_(model.fc.weight.detach())


shrink()
with torch.inference_mode():
    reset_gain()
tidy()
""",
    )
    invalid = (
        """\
import torch

w = torch.randn(3, requires_grad=True)
x, y = torch.randn(8, 3), torch.randn(8)
for _ in range(100):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    w -= 0.1 * w.grad  # expect: TL401
    w.grad.zero_()
""",
        """\
import torch


def sgd_step(model, x, y, lr=0.01):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)  # expect: TL401
        p.grad = None
""",
            """\
import torch
from torch import nn


def sinusoidal_(table):
    n, dim = table.shape
    angle = torch.arange(n).unsqueeze(1) / 10000 ** (torch.arange(0, dim, 2) / dim)
    table[:, 0::2] = torch.sin(angle)  # expect: TL401
    table[:, 1::2] = torch.cos(angle)  # expect: TL401
    table.requires_grad = False  # too late: the writes above already raised


class Embeddings(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        sinusoidal_(self.positions.weight)
        self.head = nn.Linear(dim, vocab)
        self.head.bias.zero_()  # expect: TL401

    def forward(self, ids):
        pos = torch.arange(ids.size(1))
        return self.head(self.tokens(ids) + self.positions(pos))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embeddings(100, 16, 32)


model = Encoder()
""",
        """\
import torch
from torch import nn


class ScaledLinear(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)
        self.scale = nn.Parameter(torch.ones(n))

    def forward(self, x):
        self.scale.clamp_(min=0)  # expect: TL401
        return self.fc(x) * self.scale


def clip_and_prune(critic, clip, threshold):
    for p in critic.parameters():
        p.clamp_(-clip, clip)  # expect: TL401
        p[p.abs() < threshold] = 0  # expect: TL401


def train_critic(critic, optimizer, real, fake, steps):
    for _ in range(steps):
        optimizer.zero_grad()
        loss = critic(fake).mean() - critic(real).mean()
        loss.backward()
        optimizer.step()
        clip_and_prune(critic, 0.01, 1e-4)
""",
        """\
import torch
import torchvision
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.gain = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return self.fc(x) * self.gain


model = Net()
backbone = torchvision.models.resnet18()


def reset():
    model.fc.weight.mul_(0.5)  # expect: TL401
    model.gain.fill_(1.0)  # expect: TL401
    backbone.fc.bias.zero_()  # expect: TL401


def train(loader, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        reset()
""",
    )
