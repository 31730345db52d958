"""TL405: the discriminator step backpropagates into the generator through an undetached fake."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional, Set, Tuple
import libcst as cst

from torchlint.model import FileModel, GradMode
from torchlint.model.expr import dotted, identifiers, keyword, positional, referenced_paths
from torchlint.model.gan import is_discriminator_name, is_generator_name, optimizer_role
from torchlint.model.leaves import reaching_value, wants_its_gradient
from torchlint.model.vocab import FRESH_METHODS, GRAPH_CUT_METHODS
from torchlint.model.walk import children
from torchlint.rule import Rule
from torchlint.needs import BACKWARD, Text

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, CallSite, Scope
    from torchlint.rule import Finding

_MAX_DEPTH = 8


def _last(callee: Optional[str]) -> str:
    return (callee or "").rsplit(".", 1)[-1]


class _Scope:
    """One function's GAN steps, read backwards from each ``backward()``."""

    def __init__(self, file_model: FileModel, scope: Scope) -> None:
        self.file_model = file_model
        self.scope = scope

    # -- which backward is the discriminator's step ---------------------
    def is_d_step(self, backward: CallSite) -> bool:
        """The first optimizer step after ``backward`` is D's, and no G step shares it."""
        file_model, span = self.file_model, backward.site.loop or self.scope
        later = [c for c in self.scope.calls if c.order > backward.order and span.contains(c.order)]
        steps = [(c, file_model.stepped_optimizer(c)) for c in later if file_model.stepped_optimizer(c)]
        if not steps or optimizer_role(steps[0][1]) != "D":
            return False
        next_backward = next((c.order for c in later if c.order > steps[0][0].order and file_model.is_backward(c)),
                             span.end)
        return not any(optimizer_role(opt) == "G" for c, opt in steps if c.order < next_backward)

    # -- which discriminator calls feed the loss ------------------------
    def discriminator_calls(self, expr: cst.BaseExpression, order: int, seen: Optional[Set[int]] = None,
                            depth: int = 0) -> Iterator[cst.Call]:
        """D(...) calls in ``expr`` and in the bindings of the names it reads, before ``order``."""
        seen = set() if seen is None else seen
        if depth > _MAX_DEPTH:
            return
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call) and is_discriminator_name(_last(dotted(node.func))):
                yield node
            stack.extend(children(node))
        for path in referenced_paths(expr):
            for a, value in self._bindings(self._bound_prefix(path, order), order):
                if id(a) not in seen:
                    seen.add(id(a))
                    yield from self.discriminator_calls(value, a.order, seen, depth + 1)

    def _bound_prefix(self, path: str, order: int) -> str:
        """``logits`` for ``logits.mean`` (a method read as a dotted path): the longest
        prefix bound in this function before ``order``."""
        parts = path.split(".")
        for end in range(len(parts), 0, -1):
            prefix = ".".join(parts[:end])
            if reaching_value(self.file_model, self.scope, prefix, order) is not None:
                return prefix
        return path

    def _bindings(self, path: str, order: int) -> Iterator[Tuple[Assignment, cst.BaseExpression]]:
        """The binding of ``path`` that reaches ``order``, plus ``path += ...`` after it."""
        reaching = reaching_value(self.file_model, self.scope, path, order)
        start = -1
        if reaching is not None:
            binding, value = reaching
            start = binding.order
            if binding.kind == "assign" and value is not None:  # an assignment has a value
                yield binding, value
        for a in self.scope.assignments:
            if start < a.order < order and a.kind == "aug" and dotted(a.targets[0]) == path and a.value is not None:
                yield a, a.value

    # -- does the generator's graph reach a D input ---------------------
    def carries_fake(self, expr: Optional[cst.BaseExpression], order: int, depth: int = 0) -> bool:
        if depth > _MAX_DEPTH or expr is None:
            return False
        t = type(expr)
        e: Any = expr  # ``t`` picks its exact type (faster than isinstance); mypy cannot follow that
        if t in (cst.Name, cst.Attribute):
            if t is cst.Attribute and e.attr.value in FRESH_METHODS:
                return False  # fake.data
            path = dotted(e)
            if path is None:
                return self.carries_fake(e.value, order, depth + 1)
            if wants_its_gradient(self.file_model, self.scope, path):
                return False  # WGAN-GP interpolates: differentiated on purpose
            reaching = reaching_value(self.file_model, self.scope, path, order)
            if reaching is None or reaching[0].kind != "assign":
                return False
            return self.carries_fake(reaching[1], reaching[0].order, depth + 1)
        if t is cst.Call:
            return self._call_carries_fake(e, order, depth)
        if t is cst.Subscript:
            return self.carries_fake(e.value, order, depth + 1)
        if t is cst.BinaryOperation:
            return self.carries_fake(e.left, order, depth + 1) or self.carries_fake(e.right, order, depth + 1)
        if t in (cst.Tuple, cst.List):
            return any(self.carries_fake(el.value, order, depth + 1) for el in e.elements)
        return False

    def _call_carries_fake(self, expr: cst.Call, order: int, depth: int) -> bool:
        func = expr.func
        if isinstance(func, cst.Attribute):
            if func.attr.value in GRAPH_CUT_METHODS:
                return False
            if self.carries_fake(func.value, order, depth + 1):
                return True  # fake.view(-1), fake.to(device)
        call = self.file_model.call_of(expr)
        if call is None or self.file_model.grad_at(call.site) is not GradMode.GRAD:
            return False
        if is_generator_name(_last(call.callee)):
            return True
        if self.file_model.qualify(call) is not None:  # torch.cat([real, fake])
            return any(self.carries_fake(arg.value, order, depth + 1) for arg in expr.args)
        return False  # a function we cannot read (an image pool, an augmentation)


def _loss_of(file_model: FileModel, call: CallSite) -> Optional[cst.BaseExpression]:
    """The tensor a backward call differentiates: ``loss`` in ``loss.backward()``,
    ``scaler.scale(loss).backward()``, ``self.manual_backward(loss)``, ``autograd.backward(loss)``."""
    if call.method == "backward" and isinstance(call.node.func, cst.Attribute) and call.receiver != "torch.autograd":
        receiver = call.node.func.value
        if isinstance(receiver, cst.Call) and _last(dotted(receiver.func)) == "scale":
            return positional(receiver, 0)
        return receiver
    return positional(call.node, 0)


def _only_into_others(call: CallSite) -> bool:
    """``d_loss.backward(inputs=list(D.parameters()))``: gradients go into the tensors named
    and nowhere else, so the generator's stay untouched; unless a generator is among them."""
    inputs = keyword(call.node, "inputs")
    return inputs is not None and not any(is_generator_name(name) for name in identifiers(inputs))


def _generator_frozen(file_model: FileModel, scope: Scope) -> bool:
    """The code switches requires_grad around the steps: ``requires_grad(generator, False)``,
    ``set_requires_grad(netG, False)``, Lightning's ``toggle_optimizer``, or
    ``p.requires_grad = False`` in a loop over the generator's parameters."""
    for call in scope.calls:
        method = (call.method or "").lower()
        if "toggle" in method:
            return True
        if "requires_grad" in method or "freeze" in method:
            words = {w for p in referenced_paths(call.node) for w in p.split(".")}
            if any(is_generator_name(w) for w in words):
                return True
    for a in scope.assignments:
        loop = a.site.loop
        if any(isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" for t in a.targets):
            if loop is not None and loop.iter is not None and any(is_generator_name(n) for n in identifiers(loop.iter)):
                return True
    return False


class GanFakeNotDetached(Rule):
    code = "TL405"
    name = "gan-fake-not-detached"
    message = (
        "discriminator step backpropagates into the generator through an undetached fake; "
        "feed the discriminator `fake.detach()` for its own loss"
    )
    torch_programs_only = True
    # A superset of the names ``model/gan.py`` accepts: G, netG, G_AB, G2, g_model, net_g, gen...
    # The letter comes first, and what may stand before it is looked behind for (a word's
    # start, ``_``, ``net``): a pattern that starts with a class of letters ``re`` skips
    # ahead to; one that starts with ``\b(?:net_?)?|_`` it tries at every position of the
    # file (five times the time, and these two were the costliest text gates).
    needs = (Text(r"[Gg](?:(?<!\w[Gg])|(?<=_[Gg])|(?<=\bnet[Gg]))(?:_|\d|[A-Z]\b|\b)|(?i:gen)")
             & Text(r"[Dd](?:(?<!\w[Dd])|(?<=_[Dd])|(?<=\bnet[Dd]))(?:_|\d|[A-Z]\b|\b)|(?i:dis|critic)")
             & BACKWARD)
    docs = """
## What it does
Finds a GAN discriminator update whose loss runs the discriminator on the
generator's output without `.detach()`: `fake = G(z)`, then `d_loss =
criterion(D(fake), zeros)`, `d_loss.backward()` and next the discriminator's
optimizer steps. Roles are read from names, conservatively: `G`, `netG`,
`G_AB`, `generator`, `gen` against `D`, `netD`, `discriminator`, `disc`,
`critic`, and optimizers named for them (`optimizerD`, `opt_d`,
`d_optimizer`).

## Why is this bad
`d_loss.backward()` then differentiates through the generator too: it
computes (and accumulates into the generator's `.grad`) gradients the
discriminator step throws away, roughly doubling the cost of the step. The
generator's gradients are now polluted with the discriminator's objective
unless they are cleared before the generator's backward, and the generator
step that reuses the same `fake` graph fails (`Trying to backward through
the graph a second time`) unless `retain_graph=True` keeps it alive, or fails
because `optimizerD.step()` changed the discriminator's weights in place.

Not reported: `D(fake.detach())`, a fake generated under `torch.no_grad()`
or detached when made, the generator's own step (`g_loss = criterion(D(fake),
ones)` followed by the generator's optimizer), WGAN-GP interpolates (they are
differentiated on purpose), a combined step that deliberately updates both
(a G optimizer steps before the next backward), code that freezes the
generator (`requires_grad(generator, False)`, `set_requires_grad`,
Lightning's `toggle_optimizer`), a discriminator backward limited to its own
tensors (`d_loss.backward(inputs=list(D.parameters()))` writes no gradient
into the generator), and fakes that pass through functions torchlint cannot
read (an image pool, an augmentation).

## Example
```python
fake = netG(noise)
d_loss = criterion(netD(real), ones) + criterion(netD(fake), zeros)
optimizerD.zero_grad()
d_loss.backward()
optimizerD.step()
```

## Use instead
```python
fake = netG(noise)
d_loss = criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros)
optimizerD.zero_grad()
d_loss.backward()
optimizerD.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for scope in file_model.scopes:
            backwards = file_model.backwards_in(scope)
            if not backwards or _generator_frozen(file_model, scope):
                continue
            gan, reported = _Scope(file_model, scope), set()
            for call in backwards:
                loss = _loss_of(file_model, call)
                if loss is None or not gan.is_d_step(call) or _only_into_others(call):
                    continue
                for d_call in gan.discriminator_calls(loss, call.order):
                    site = file_model.call_of(d_call)
                    if id(d_call) in reported or site is None:
                        continue
                    if any(gan.carries_fake(arg.value, site.order) for arg in d_call.args):
                        reported.add(id(d_call))
                        yield self.report(d_call)

    valid = (
        """\
import torch


def train_step(G, D, opt_g, opt_d, real, z, bce):
    fake = G(z)
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(fake.detach()), torch.zeros(len(z), 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = bce(D(fake), torch.ones(len(z), 1))
    g_loss.backward()
    opt_g.step()
""",
        """\
import torch


def train_step(generator, discriminator, d_optimizer, real, z):
    with torch.no_grad():
        fake = generator(z)
    d_optimizer.zero_grad()
    d_loss = discriminator(fake).mean() - discriminator(real).mean()
    d_loss.backward()
    d_optimizer.step()
""",
    )
    invalid = (
        """\
import torch


def train_step(G, D, opt_d, real, z, bce):
    fake = G(z)
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(fake), torch.zeros(len(z), 1))  # expect: TL405
    d_loss.backward()
    opt_d.step()
""",
        """\
import torch


def train(netG, netD, optimizerD, loader, criterion, nz=100):
    for real, _ in loader:
        fake = netG(torch.randn(real.size(0), nz, 1, 1))
        optimizerD.zero_grad()
        errD_fake = criterion(netD(fake), torch.zeros(real.size(0)))  # expect: TL405
        errD_fake.backward()
        optimizerD.step()
""",
    )
