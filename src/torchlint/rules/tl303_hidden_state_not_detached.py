"""TL303: an RNN hidden state is carried into the next batch with its graph."""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Tuple, Union
from torchlint.model import FileModel
from torchlint.model.carry import Flow, carried_states, is_state_name
from torchlint.needs import TRAINING_STEP, TRAINS, LoopBinds
from torchlint.rule import Rule

if TYPE_CHECKING:
    from torchlint.model.records import Loop, Scope
    from torchlint.rule import Finding


class HiddenStateNotDetached(Rule):
    code = "TL303"
    name = "hidden-state-not-detached"
    message = (
        "recurrent state is carried into the next training iteration with its autograd graph, "
        "so the next backward() runs into this iteration's freed graph; detach it once per "
        "iteration (h = h.detach(), or repackage_hidden(h) for tuples)"
    )
    torch_programs_only = True
    # A training loop (or Lightning step) that rebinds a state-named variable.
    needs = TRAINING_STEP | (TRAINS & LoopBinds(is_state_name))

    docs = """
## What it does
Finds a recurrent state (an RNN/LSTM/GRU hidden state such as `hidden`,
`h`, `(h, c)`, `self.state`) that a training loop feeds back into the model
batch after batch without `detach()`: the state is bound before the loop,
`output, hidden = model(x, hidden)` rebinds it from the model's output in
every iteration, and nothing in the iteration cuts it (`hidden.detach()`,
`repackage_hidden(hidden)`, `tuple(h.detach() for h in hidden)`,
`hidden.data`, `hidden.detach_()`, or re-initialising it). Lightning's
`training_step` counts as one iteration for state kept on `self`.

## Why is this bad
The new hidden state's `grad_fn` links to the previous batch's graph. The
next `backward()` walks into that graph, whose saved tensors the previous
`backward()` already freed, and raises `RuntimeError: Trying to backward
through the graph a second time`. The usual forum advice,
`backward(retain_graph=True)` (see TL302), swaps that error for
`one of the variables needed for gradient computation has been modified by
an inplace operation` once `optimizer.step()` has updated the weights, or,
where nothing is modified in place, for a graph that spans every batch
since the start: memory and backward time grow with each batch. Truncated
backpropagation through time means detaching the state at each batch
boundary.

Not reported: state detached or re-initialised anywhere in the iteration
(also every k batches: that is truncated BPTT on purpose), state computed
under `no_grad` (evaluation, generation), loops over time steps that do not
backpropagate inside the loop (full BPTT with one `backward()` after it),
and state handed to functions we cannot read (they may detach it). Names
decide what is a recurrent state (`hidden`, `hx`, `h`, `c`, `state`,
`carry` and compounds of them); model memories such as Transformer-XL's
`mems` are not, since those models detach them themselves.

## Example
```python
hidden = model.init_hidden(batch_size)
for x, y in batches:
    optimizer.zero_grad()
    output, hidden = model(x, hidden)
    loss = criterion(output, y)
    loss.backward()
    optimizer.step()
```

## Use instead
```python
def repackage_hidden(h):
    # an LSTM's state is a tuple (h, c)
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)

hidden = model.init_hidden(batch_size)
for x, y in batches:
    optimizer.zero_grad()
    hidden = repackage_hidden(hidden)
    output, hidden = model(x, hidden)
    loss = criterion(output, y)
    loss.backward()
    optimizer.step()
```
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        flow, reported = Flow(file_model), set()
        for scope, span in self._iterations(file_model):
            for assignment, _ in carried_states(file_model, flow, scope, span):
                if id(assignment.node) not in reported:
                    reported.add(id(assignment.node))
                    yield self.report(assignment.node)

    @staticmethod
    def _iterations(file_model: FileModel) -> Iterator[Tuple[Scope, Union[Loop, Scope]]]:
        """Training iterations: loops that backpropagate or step, and Lightning's training_step."""
        for scope in file_model.scopes:
            if scope.class_name is not None and scope.name == "training_step":
                yield scope, scope
            for loop in scope.loops:
                if file_model.loop_role(loop).trains:
                    yield scope, loop

    valid = (
        """\
import torch


def train(model, batches, optimizer, criterion):
    hidden = model.init_hidden(32)
    for x, y in batches:
        hidden = hidden.detach()
        optimizer.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
""",
        """\
import torch


def train(model, batches, optimizer, criterion):
    for x, y in batches:
        hidden = model.init_hidden(x.size(0))
        optimizer.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
""",
        """\
import torch


def train(model, batches, optimizer, criterion):
    h, c = model.init_state(32)
    for x, y in batches:
        optimizer.zero_grad()
        output, (h, c) = model(x, (h, c))
        criterion(output, y).backward()
        optimizer.step()
        h, c = h.detach(), c.detach()
""",
    )
    invalid = (
        """\
import torch


def train(model, batches, optimizer, criterion):
    hidden = model.init_hidden(32)
    for x, y in batches:
        optimizer.zero_grad()
        output, hidden = model(x, hidden)  # expect: TL303
        loss = criterion(output, y)
        loss.backward()
        optimizer.step()
""",
        """\
import torch
import torch.nn.functional as F


def train(cell, head, series, optimizer, steps):
    state = None
    for t in range(steps):
        optimizer.zero_grad()
        state = cell(series[:, t], state)  # expect: TL303
        loss = F.mse_loss(head(state[0]), series[:, t + 1])
        loss.backward()
        optimizer.step()
""",
    )
