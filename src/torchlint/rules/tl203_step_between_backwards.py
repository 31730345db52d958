"""TL203: a backward() through a forward pass whose weights an optimizer.step() already changed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Sequence, Tuple, Union
from torchlint.model import FileModel, differentiated
from torchlint.model.steps import forward_sources, may_run_after, model_called, updates_model
from torchlint.rule import Rule
from torchlint.needs import BACKWARD, STEP

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Loop, Scope
    from torchlint.rule import Finding


def _updated_by_step(file_model: FileModel, sources: List[CallSite], step: CallSite, optimizer: str,
                     span: Union[Loop, Scope]) -> bool:
    """Did one of the forward passes ``sources`` run before ``step`` (in this iteration),
    through a model that ``optimizer`` updates?"""
    for source in sources:
        if source.order < step.order and span.contains(source.order):
            model = model_called(file_model, source)
            if model is not None and updates_model(file_model, optimizer, model, step.scope):
                return True
    return False


class StepBetweenBackwards(Rule):
    code = "TL203"
    name = "step-between-backwards"
    message = (
        "backward() through a forward pass computed before an optimizer.step() that changed its weights "
        "in place (autograd raises or uses stale weights); recompute the forward pass after the step"
    )
    torch_programs_only = True
    needs = BACKWARD & STEP
    docs = """
## What it does
Finds a `backward()` whose loss was computed (in part) from a forward pass
that ran *before* an `optimizer.step()`, when that optimizer updates the
model of that forward pass and another `backward()` came before the step:
the GAN loop that steps the discriminator and then backpropagates the
generator's loss through a discriminator output from before the step
(`out = D(fake)` used for both losses, or `loss_G` computed before
`opt_D.step()`).

Only forward passes of models are followed, through the function's own
assignments, arithmetic, tensor methods, torch functions and losses; what
an optimizer updates is read from its construction (`Adam(netD.parameters())`,
or a variable it is given that was built from them: `params =
itertools.chain(enc.parameters(), dec.parameters())`) or, where that is not
in the file, from GAN names (`optimizerD` and `netD`).

## Why is this bad
`optimizer.step()` writes the new weights into the parameters in place.
The graph recorded by the earlier forward pass saved those weights to
compute gradients, so the second `backward()` fails with `RuntimeError: one
of the variables needed for gradient computation has been modified by an
inplace operation`; where nothing saved was modified, it silently computes
gradients against weights that no longer exist.

Not reported: the standard DCGAN order (the generator's loss recomputes
`netD(fake)` after the discriminator's step), two losses through one graph
summed or backpropagated with `retain_graph=True` before any step,
gradient accumulation, one optimizer stepped after both backwards, a second
backward through a fresh forward pass, and an optimizer that does not update
the model of the earlier forward (the generator's output `fake` made before
the discriminator's step is fine).

## Example
```python
output = netD(fake)
errD = criterion(output, zeros)
errG = criterion(output, ones)
errD.backward(retain_graph=True)
optimizerD.step()
errG.backward()
optimizerG.step()
```

## Use instead
```python
errD = criterion(netD(fake.detach()), zeros)
errD.backward()
optimizerD.step()
errG = criterion(netD(fake), ones)
errG.backward()
optimizerG.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        for scope in file_model.scopes:
            backwards = file_model.backwards_in(scope)
            if len(backwards) < 2:
                continue
            steps = [(c, optimizer) for c in scope.calls if (optimizer := file_model.stepped_optimizer(c))]
            for backward in backwards:
                if self._after_step_through_stale_graph(file_model, scope, backward, backwards, steps):
                    yield self.report(backward.node)

    @staticmethod
    def _after_step_through_stale_graph(file_model: FileModel, scope: Scope, backward: CallSite,
                                        backwards: Sequence[CallSite], steps: List[Tuple[CallSite, str]]) -> bool:
        span = backward.site.loop or scope
        sources = None  # the forward passes the loss comes from, read once
        for step, optimizer in steps:
            if not (step.order < backward.order and span.contains(step.order)):
                continue
            if not any(b.order < step.order and span.contains(b.order) for b in backwards):
                continue  # no backward before the step: not two backwards around it
            if not may_run_after(scope, step.node, backward.node, file_model.parents):
                continue  # if/else branches, or ``optimizer.step(); continue``
            if sources is None:
                sources = list(forward_sources(file_model, scope, differentiated(backward), backward.order))
            if _updated_by_step(file_model, sources, step, optimizer, span):
                return True
        return False

    valid = (
        """\
import torch


def train(netG, netD, optimizerG, optimizerD, loader, criterion, nz=100):
    for real, _ in loader:
        noise = torch.randn(real.size(0), nz, 1, 1)
        fake = netG(noise)
        netD.zero_grad()
        errD = criterion(netD(real), torch.ones(real.size(0))) + criterion(
            netD(fake.detach()), torch.zeros(real.size(0)))
        errD.backward()
        optimizerD.step()
        netG.zero_grad()
        output = netD(fake)  # recomputed with the updated discriminator
        errG = criterion(output, torch.ones(real.size(0)))
        errG.backward()
        optimizerG.step()
""",
        """\
import torch


def train(model, loader, optimizer, criterion, accum=4):
    for i, (x, y) in enumerate(loader):
        out = model(x)
        loss_a = criterion(out, y)
        loss_a.backward(retain_graph=True)
        loss_b = out.pow(2).mean()
        loss_b.backward()
        if (i + 1) % accum == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
import torch


def train(backbone, head_a, head_b, loader, criterion):
    opt_a = torch.optim.SGD(head_a.parameters(), lr=0.1)
    opt_b = torch.optim.SGD(list(backbone.parameters()) + list(head_b.parameters()), lr=0.1)
    for x, y in loader:
        opt_a.zero_grad()
        opt_b.zero_grad()
        features = backbone(x)
        criterion(head_a(features.detach()), y).backward()
        opt_a.step()  # updates head_a only: backbone's graph is intact
        criterion(head_b(features), y).backward()
        opt_b.step()
""",
    )
    invalid = (
        """\
import torch


def update(actor, critic, states, returns, log_probs):
    actor_opt = torch.optim.Adam(actor.parameters())
    critic_opt = torch.optim.Adam(critic.parameters())
    values = critic(states).squeeze(-1)
    critic_loss = (returns - values).pow(2).mean()
    critic_opt.zero_grad()
    critic_loss.backward(retain_graph=True)
    critic_opt.step()
    actor_loss = -(log_probs * (returns - values)).mean()
    actor_opt.zero_grad()
    actor_loss.backward()  # expect: TL203
    actor_opt.step()
""",
        """\
import torch


def train_step(G, D, real, z, bce):
    opt_g = torch.optim.Adam(G.parameters())
    opt_d = torch.optim.Adam(D.parameters())
    fake = G(z)
    d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(fake.detach()), torch.zeros(len(z), 1))
    g_loss = bce(D(fake), torch.ones(len(z), 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss.backward()  # expect: TL203
    opt_g.step()
""",
    )
