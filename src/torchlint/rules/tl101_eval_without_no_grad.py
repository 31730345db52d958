"""TL101: evaluation code runs the model without no_grad, building a graph nobody uses."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from torchlint.edits import enclosing_statement, shadowed, suspends, torch_reference, without_volatile, wrap_in_with
from torchlint.model import CallSite, FileModel, GradMode, Span, differentiated, modes
from torchlint.model.backprop import consumed_by_backward
from torchlint.model.display import runs_a_few_times, shown_only
from torchlint.model.evaluation import (
    bound_locally, bound_then_read_as_numbers, computes_with, demonstrates_fresh_layers, evaluation_only,
    forwards_that_train, guarded_training, hand_written_forward, raw_parameters, read_as_numbers,
    training_flag_switches,
)
from torchlint.model.project_calls import evaluation_forwards
from torchlint.model.sinks import Meters
from torchlint.model.expr import bound_paths, bound_values, dotted, identifiers, literal_bool, read_paths
from torchlint.model.walk import walk
from torchlint.model.vocab import (
    CONTAINER_METHODS, NUMBERS_OF_AN_OUTPUT, PICKS_FROM_AN_OUTPUT, STORE_METHODS,
)
from torchlint.model.vocab import EVAL_DATA_TOKENS, EVAL_FUNCTION_DEF, GENERATION_FUNCTION_DEF, LOADER_SPELLING
from torchlint.model.vocab import is_eval_data_name, is_eval_function_name, token_spelling
from torchlint.model.vocab import SERVING_METHODS, is_eval_loader_name, is_generation_function_name
from torchlint.model.vocab import is_transform_name, unwrapped_module
from torchlint.needs import (
    BindsThenReadsNumbersInALoop, CallsAHandWrittenForward, EvaluationLoop, GeneratesInALoop, GuardsABackward,
    HandsAModelToAnImport, HeldOutDataInALoop, InferenceWithoutBackward, ReadsNumbersOffAForward,
    SamplesWithRawParameters, ServesAfterEval, SwitchesToEvalAndRuns, Text,
)
from torchlint.rule import Fix, Rule
from torchlint.text_gate import EVAL_SWITCH_CALL

if TYPE_CHECKING:
    from torchlint.model.records import Assignment, Loop, Scope
    from torchlint.model.taint import Taint
    from torchlint.rule import Finding


def mode_switches(file_model: FileModel, scope: Scope) -> list:
    """``(order, receiver, is_eval)`` for each ``x.eval()`` / ``x.train(...)`` in ``scope``.
    A ``train(flag)`` that cannot be read counts as a switch back to training: the
    code may evaluate with gradients on purpose, and silence costs less than a false alarm."""
    calls = [(s.order, s.receiver, s.to_eval is True) for s in modes.mode_switches(file_model, scope.calls)]
    return sorted(calls + training_flag_switches(scope))


_HELPER_MESSAGE = ("`{}` (a function of this project) runs the model forward in evaluation code without "
                   "torch.no_grad(); wrap the evaluation in `with torch.no_grad():` (or torch.inference_mode())")


def _covers(receiver: str, target: Optional[str]) -> bool:
    return target is not None and (target == receiver or target.startswith(receiver + "."))


_CUTS = PICKS_FROM_AN_OUTPUT

# What evaluation or inference code spells somewhere: an eval switch, loader-named data, a function
# named for evaluation or generation, a training flag cleared, held-out data, a read of numbers.
# Spelled out rather than (?i:...): a case-insensitive group makes the scan several times slower.
_EVALUATION_SPELLED = "|".join((
    EVAL_SWITCH_CALL, LOADER_SPELLING, EVAL_FUNCTION_DEF, GENERATION_FUNCTION_DEF,
    r"[Tt]rain\w*\s*=\s*(?:False|0\b)|[\"'](?:val|valid|test|eval)[\"']",
    token_spelling(EVAL_DATA_TOKENS),  # held-out data: ``x_test``, ``X_val``, ``dev_x``
    r"argmax|argmin|multinomial|topk|\.item\(|\.tolist\(|\.numpy\(|\.data\[",
))


class EvalWithoutNoGrad(Rule):
    code = "TL101"
    name = "eval-without-no-grad"
    message = (
        "model called in evaluation code without torch.no_grad(); wrap the evaluation in "
        "`with torch.no_grad():` (or torch.inference_mode())"
    )
    fix_safety = "unsafe"
    torch_programs_only = True
    # TL101 reports forwards over evaluation; TL107, its opt-in twin, the ones made for a look.
    reports_looks: ClassVar[bool] = False
    # Not asked of a file parsed anyway: on training code its question (twelve alternatives, all
    # unspelled) costs three times the check it spares (bench/README.md, "Folders read once,
    # one project lookup a lint"); the benchmark tree's libraries pay about what they save.
    # Asked in this order until one holds: the cheap questions that most training files answer
    # yes to first (a quarter less time on the training corpus than the order of the docs).
    needs = Text(_EVALUATION_SPELLED) & (
        EvaluationLoop() | GeneratesInALoop() | BindsThenReadsNumbersInALoop() | ServesAfterEval()
        | SamplesWithRawParameters() | GuardsABackward() | HandsAModelToAnImport() | SwitchesToEvalAndRuns()
        | InferenceWithoutBackward() | HeldOutDataInALoop() | CallsAHandWrittenForward() | ReadsNumbersOffAForward())

    docs = """
## What it does
Finds forward passes in evaluation or inference code that run while autograd
is recording: after `model.eval()` (with no `model.train()` back), in a loop of
a function named like `evaluate`/`validate`/`test`/`predict`/`inference`, or in
a loop over a validation or test loader, with neither `torch.no_grad()` nor
`torch.inference_mode()` in effect.

Inference is also told by what the code does with the result: an agent's
action read off as numbers at every environment step (`q(s).argmax().item()`,
also between the updates of the loop that trains it: a forward whose output
becomes numbers in its own statement feeds no backward, and the fix wraps
that statement alone; so does one bound to a name that every later read turns
into numbers or hands to a `torch.distributions` constructor only sampled from,
as in `prob = model.pi(s)`, `values, idx = q(s).max(1)`, `a = Categorical(prob).sample().item()`,
`put_data((s, a, prob[a].item()))`),
a decoding or sampling loop (`while`, `range`) that runs a model's parts after
`model.eval()` (`decoder.fc(h)` in a beam search), hand-written layers put in
eval mode with `layer.training = False`, and sampling with tensors trained by
hand (`W = torch.randn(..., requires_grad=True)`, `emb = C[context]`,
`h @ W1`) in a loop that only reads numbers off its results and feeds no
backward. A function of the file that computes with such tensors and no
gradient (`def net(x): return relu(x @ W1 + b1) @ W2 + b2`) is a model written
as a function: its calls are forwards like a module's. Code that keeps what it sampled for a loss (REINFORCE's log-probs,
an actor-critic's saved values, a DQN's update step, teacher forcing) is
training and stays silent, also when it keeps them through a method of its
own class (`pi.put_data((r, prob[a]))`).

A method that serves predictions (`predict`, `infer`, `inference`, `handle`,
`serve`, `classify`) of a class that puts its model in eval mode
(in the method or in `__init__`) and hands back numbers (`.tolist()`,
`.item()`, `argmax`) is evaluation too: a server or a user calls it once per
request, and each call records a graph nobody can use.

Helpers of the project's own modules are read too (`from .metrics import
measure`): a call from evaluation code of a helper that runs the model it is
handed, with grad on, is reported at the call, and a helper that computes
gradients (a backward, an optimizer step) makes the code around it training.

## Why is this bad
`model.eval()` only switches dropout and batch-norm to inference behaviour; it
does not stop autograd. Every forward pass still records a graph and keeps
the activations it needs for a backward pass that never comes: evaluation
takes more memory (often the difference between fitting a batch size and an
out-of-memory error) and more time. If the outputs are then stored, the
graphs of the whole evaluation stay alive.

torchlint stays silent where grad mode is already off: under `no_grad`,
`inference_mode` or `set_grad_enabled(False)`, in functions decorated with
them, in functions only called from such regions in the same module (or
wrapped at the call, `torch.no_grad()(evaluate)(model, loader)`), in framework
hooks that run without grad (Lightning's `validation_step`, `test_step`,
`predict_step`), and where the model is frozen (`requires_grad_(False)`,
`p.requires_grad = False`, Lightning's `freeze()`). Freshly built layers run
on random input in a file that neither trains nor loads weights
(`nn.Conv2d(3, 8, 3)` on `torch.randn(1, 3, 32, 32)`, to show a shape) are no
model being evaluated, and a file whose imports name other libraries and never
torch is not read for this rule (a snippet without imports still is). Code that deliberately needs gradients in
evaluation (input gradients, adversarial examples, test-time training: a
`backward()`, `autograd.grad` or `requires_grad_()` nearby) is left alone, as
are pytest test functions. So is a single forward pass that runs once, outside
any loop or comprehension (and not in a helper a loop of the file calls):
one image classified and shown, one batch plotted, one sentence encoded for
translation. Its graph is freed with its output; nothing is evaluated over a
dataset. A single forward over a whole evaluation set (`model(x_test)`,
`net(X_val)`) is still reported.

Forwards made only to look at the model are left to the opt-in TL107: an
output that reaches nothing but a plot, a saved image or a shape read
(generated samples saved every N batches, a scatter plot once per epoch), and
a loop of at most ten steps at the top of a script or notebook. Their graph is
small and freed with the output; the waste does not grow with a dataset.
A loop that runs several parts of one model (a beam search through
`decoder.embedding`, `decoder.attention` and `decoder.fc`) is one finding, on
the first of them: one `with torch.no_grad():` fixes it.

## Example
```python
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
```

## Use instead
```python
@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
```

## Fix safety
The fix wraps the loop that holds the forward pass (outside a loop, the
statement) in `with torch.no_grad():`, naming torch the way the file does
(`T.no_grad()` after `import torch as T`) and adding `import torch` only when
the file lacks it. It is unsafe: code the loop calls in other modules (a
library's, or a method torchlint cannot resolve) may need gradients (input
gradients, hooks, a helper that trains), and a caller may backpropagate
through the outputs;
under `no_grad` they no longer require grad, so such code raises or silently
stops learning. No fix is offered for loops that `yield` or `await`, or are
`async for` loops (the `with` would leave grad mode off in the caller, or in
other coroutines, while they are suspended), for one-line bodies, or where a
local name (a parameter called `torch`) hides the module the fix would name.
"""

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        if file_model.names.imports_only_other_modules:
            return  # its ``model(x)`` runs a model of the libraries it imports, not torch's
        for scope in file_model.scopes:
            # A notebook's ``p.requires_grad = True`` sets up training; only freezing excuses it.
            handles = _freezes_parameters(file_model) if scope.is_module else _handles_grad(scope)
            if not scope.calls or handles or file_model.part_of_forward(scope):
                continue
            if file_model.is_test_function(scope):
                continue
            switches = mode_switches(file_model, scope)
            # A transform put in eval mode (botorch's outcome_transform) is not a model.
            models = {receiver for _, receiver, is_eval in switches if is_eval and not is_transform_name(receiver)}
            if not self.reports_looks:
                for call in evaluation_forwards(file_model, scope):  # a helper of another module runs the model
                    yield self.report(call.node, _HELPER_MESSAGE.format(call.callee),
                                      fix=_no_grad_fix(file_model, call))
            forwards_reported = set()  # loops already reported through a model call
            models_reported = set()  # (loop, model): one finding per model a loop runs
            for call in scope.calls:
                if not (file_model.is_forward(call, models) or _steps_a_part(file_model, scope, call, models)
                        or hand_written_forward(file_model, call)
                        or _acts_with_a_model_of_the_file(file_model, scope, call)):
                    continue
                if file_model.grad_at(call.site) is not GradMode.GRAD:
                    continue
                helper = _runs_what_it_is_given(file_model, scope, call) and evaluation_only(file_model, scope)
                if call.site.loop is None and not helper and file_model.flows_to_return(call) \
                        and not _hands_back_numbers(file_model, scope) and not _generates(file_model, scope, call):
                    continue  # one forward handed back: the caller may want its graph
                if not file_model.repeats(call) and not _on_eval_data(call) \
                        and not _serves_numbers(file_model, scope, call):
                    continue  # one image shown, one batch plotted: no evaluation loop
                span = self._evaluation_span(file_model, scope, call, switches, helper)
                if span is not None and not self._needs_grad(file_model, span):
                    forwards_reported.add(id(_outermost(call.site.loop)))
                    fix = _no_grad_fix(file_model, call, span)
                elif _before_guarded_backward(file_model, scope, call):
                    fix = None  # no_grad would stop the training half too: set_grad_enabled is the cure
                else:
                    continue
                if _for_a_look(file_model, scope, call) is not self.reports_looks:
                    continue
                key = _loop_and_model(call)
                if key is None or key not in models_reported:
                    models_reported.add(key)
                    yield self.report(call.node, fix=fix)
            if not handles and not self.reports_looks:
                yield from self._raw_parameter_steps(file_model, scope, forwards_reported)

    def _raw_parameter_steps(self, file_model: FileModel, scope: Scope, reported: set) -> Iterator[Finding]:
        """Sampling with hand-trained tensors (``emb = C[ctx]``, ``h @ W1``) in a ``range`` or
        ``while`` loop that reads numbers off its results and feeds no backward: the first
        statement of each such loop that computes with a parameter."""
        params = raw_parameters(file_model)
        if not params or not (scope.is_module or is_generation_function_name(scope.name)):
            return
        for a in scope.assignments:
            loop = _outermost_step_loop(a.site.loop)
            if loop is None or id(loop) in reported or a.kind not in ("assign", "aug") or a.value is None:
                continue
            if not computes_with(file_model, a.value, params - bound_locally(scope)):
                continue
            if file_model.grad_at(a.site) is not GradMode.GRAD or not _reads_numbers(scope, loop):
                continue
            if _loop_feeds_a_backward(file_model, scope, loop) or self._needs_grad(file_model, (loop.start, loop.end)):
                continue
            if not scope.is_module and (_returns_a_graph(file_model, scope) or _keeps_graph(file_model, scope)):
                continue
            reported.add(id(loop))
            yield self.report(a.value, message=self.raw_message,
                              fix=_wrap_in_no_grad(file_model, scope, a.site.loop, a.value))

    raw_message = (
        "tensors trained by hand (requires_grad=True) used in sampling code without torch.no_grad(); "
        "wrap the loop in `with torch.no_grad():`"
    )

    def _evaluation_span(self, file_model: FileModel, scope: Scope, call: CallSite,
                         switches: List[Tuple[int, str, bool]], helper: bool) -> Optional[Tuple[int, int]]:
        """The stretch of code that makes this call evaluation, as (start, end), or None."""
        target = file_model.forward_target(call)
        last = None
        for order, receiver, is_eval in switches:
            if order < call.order and _covers(receiver, target):
                last = (order, receiver, is_eval)
        if last is not None and last[2]:
            ends = [o for o, r, e in switches if o > last[0] and not e and _covers(r, target)]
            return _loop_of_the_module(file_model, scope, call, (last[0], min(ends, default=scope.end)))
        if last is not None:
            return None  # the model was put back in training mode
        if demonstrates_fresh_layers(file_model, call):
            return None  # ``conv(torch.randn(1, 3, 32, 32))``: a shape shown, no model evaluated
        loop = call.site.loop
        while loop is not None:
            if loop.iter is not None and any(is_eval_loader_name(n) for n in identifiers(loop.iter)):
                return (loop.start, loop.end)
            loop = loop.parent
        if not scope.is_module and is_eval_function_name(scope.name) and _in_data_loop(file_model, scope, call):
            return (scope.start, scope.end)
        if helper or (not scope.is_module and _generates(file_model, scope, call)):
            return (scope.start, scope.end)
        if not scope.is_module and _global_model_in_eval(file_model, scope, target):
            return (scope.start, scope.end)
        if _runs_on_held_out_data(file_model, scope, call) or _only_numbers(file_model, scope, call):
            return (call.order, call.order + 1)
        if _serves_numbers(file_model, scope, call):
            return (scope.start, scope.end)
        return _pure_inference(file_model, scope, call)

    @staticmethod
    def _needs_grad(file_model: FileModel, span: Tuple[int, int]) -> bool:
        """Gradients are wanted here: input gradients, attacks, test-time training."""
        window = Span(*span)
        return any(
            file_model.needs_autograd(call)
            for call in file_model.reachable_calls(window)
        )

    valid: ClassVar[Tuple[str, ...]] = (
        """\
import torch


class Handler:
    def __init__(self, path):
        self.model = torch.jit.load(path)
        self.model.eval()

    @torch.inference_mode()
    def handle(self, batch):
        return self.model(batch).argmax(-1).tolist()

    def embed(self, batch):
        return self.model(batch)  # a graph handed back: the caller may train through it
""",
        """\
import torch
from torchvision.utils import save_image


def sample_images(generator, noise, step):
    generator.eval()
    fake = generator(noise)  # for a look, not an evaluation: TL107 (opt-in) reports it
    save_image(fake.data, f"images/{step}.png", nrow=5)
    generator.train()


def train(generator, optimizer, loader, noise):
    for step, z in enumerate(loader):
        loss = generator(z).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 500 == 0:
            sample_images(generator, noise, step)
""",
        """\
import torch


def run_epoch(model, loaders, optimizer, criterion):
    for phase in ("train", "val"):
        model.train(phase == "train")
        for x, y in loaders[phase]:
            with torch.set_grad_enabled(phase == "train"):
                loss = criterion(model(x), y)
            if phase == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
""",
        """\
import torch
import torch.nn.functional as F
import pytorch_lightning as pl


class Classifier(pl.LightningModule):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("val_loss", loss)
""",
        """\
import torch


def evaluate_robustness(model, val_loader, eps=0.03):
    model.eval()
    for x, y in val_loader:
        x = x.clone().requires_grad_(True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        (grad,) = torch.autograd.grad(loss, x)
        yield (x + eps * grad.sign()).detach()
""",
        """\
import gym
import torch
import torch.nn as nn
from torch.distributions import Categorical

policy = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2), nn.Softmax(dim=-1))
optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
env = gym.make("CartPole-v1")


def choose(state, log_probs):
    dist = Categorical(policy(torch.as_tensor(state)))
    action = dist.sample()
    log_probs.append(dist.log_prob(action))
    return action.item()


for episode in range(500):
    state, log_probs, rewards = env.reset()[0], [], []
    done = False
    while not done:
        state, reward, done, *_ = env.step(choose(state, log_probs))
        rewards.append(reward)
    loss = -torch.stack(log_probs).sum() * sum(rewards)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
        """\
import numpy as np
import torch
import torch.nn as nn


class Learner:
    def __init__(self):
        self.online, self.target = nn.Linear(4, 2), nn.Linear(4, 2)
        self.opt = torch.optim.Adam(self.online.parameters())

    def update(self, s, a, r, s2):
        q = self.online.forward(s).gather(1, a)
        q_next = self.target(s2).detach().max(1)[0].unsqueeze(1)
        loss = nn.functional.mse_loss(q, r + 0.9 * q_next)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


learner = Learner()
for step in range(100):
    s, s2 = torch.randn(32, 4), torch.randn(32, 4)
    a, r = torch.randint(0, 2, (32, 1)), torch.randn(32, 1)
    print(learner.update(s, a, r, s2))
""",
        """\
import torch
import torch.nn.functional as F

W = torch.randn((27, 27), requires_grad=True)
for step in range(100):
    ix = torch.randint(0, 27, (64,))
    logits = F.one_hot(ix, 27).float() @ W
    loss = F.cross_entropy(logits, torch.randint(0, 27, (64,)))
    W.grad = None
    loss.backward()
    with torch.no_grad():
        W -= 0.1 * W.grad
    print(loss.item())

with torch.no_grad():
    for _ in range(5):
        ix, out = 0, []
        while True:
            probs = F.softmax(F.one_hot(torch.tensor([ix]), 27).float() @ W, dim=1)
            ix = torch.multinomial(probs, 1).item()
            out.append(ix)
            if ix == 0:
                break
""",
        """\
import torch
import torch.nn.functional as F

E = torch.randn((27, 16), requires_grad=True)
W = torch.randn((16, 27), requires_grad=True)
opt = torch.optim.SGD([E, W], lr=0.1)
for episode in range(100):
    ix, log_probs = 0, []
    for t in range(10):
        logits = E[torch.tensor([ix])] @ W
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs, 1).item()
        log_probs.append(torch.log(probs[0, ix]))
    loss = -torch.stack(log_probs).sum() * (1.0 if ix == 0 else -1.0)
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
        """\
import torch
import torch.nn as nn


class Captioner(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.cell = nn.GRUCell(32, 32)
        self.head = nn.Linear(32, 100)

    def make_mask(self, tokens):
        return tokens != 0


model = Captioner()
optimizer = torch.optim.Adam(model.parameters())


def validate(tokens):
    model.eval()
    h = torch.zeros(1, 32)
    words = [1]
    with torch.no_grad():
        for t in range(20):
            h = model.cell(model.embed(torch.tensor([words[-1]])), h)
            words.append(model.head(h).argmax(-1).item())
    for t in range(20):
        mask = model.make_mask(torch.tensor(words))
        print(mask.sum().item())
    model.train()
    return words


for epoch in range(3):
    tokens = torch.randint(0, 100, (8, 12))
    h, loss = torch.zeros(8, 32), 0.0
    for t in range(tokens.size(1) - 1):
        h = model.cell(model.embed(tokens[:, t]), h)
        loss = loss + nn.functional.cross_entropy(model.head(h), tokens[:, t + 1])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    validate(tokens)
""",
        """\
import torch
import torch.nn as nn

G = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
D = nn.Sequential(nn.Linear(16, 1), nn.Sigmoid())
opt_g = torch.optim.Adam(G.parameters())
opt_d = torch.optim.Adam(D.parameters())
bce = nn.BCELoss()
for step in range(1000):
    real = torch.randn(32, 16)
    fake = G(torch.randn(32, 8))
    d_loss = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(D(fake), torch.ones(32, 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    if step % 100 == 0:
        print(D(fake).mean().item())
""",
        """\
import torch
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 2)

    @torch.no_grad()
    def act(self, obs):
        return self.body(obs).argmax(-1)

    def scores(self, obs):
        with torch.no_grad():
            return self.body(obs)


policy = Policy()
policy.eval()
obs = torch.zeros(1, 4)
for step in range(100):
    action = policy.act(obs).item()
    best = policy.scores(obs).max().item()
    obs = torch.randn(1, 4)
""",
        """\
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical

Step = namedtuple("Step", ["log_prob", "value"])


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 32)
        self.actor = nn.Linear(32, 2)
        self.critic = nn.Linear(32, 1)
        self.history = []

    def forward(self, x):
        h = F.relu(self.trunk(x))
        return F.softmax(self.actor(h), dim=-1), self.critic(h)


agent = ActorCritic()
optimizer = torch.optim.Adam(agent.parameters(), lr=3e-2)


def pick(state):
    probs, value = agent(torch.from_numpy(state).float())
    dist = Categorical(probs)
    action = dist.sample()
    agent.history.append(Step(dist.log_prob(action), value))
    return action.item()


for episode in range(100):
    state, rewards = np.zeros(4, dtype=np.float32), []
    for t in range(200):
        action = pick(state)
        state = np.random.rand(4).astype(np.float32)
        rewards.append(1.0)
    losses = [-s.log_prob * (r - s.value.item()) + F.smooth_l1_loss(s.value, torch.tensor([r]))
              for s, r in zip(agent.history, rewards)]
    optimizer.zero_grad()
    torch.stack(losses).sum().backward()
    optimizer.step()
    del agent.history[:]
""",
        """\
import gym
import torch

env = gym.make("CartPole-v1")
q = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
opt = torch.optim.Adam(q.parameters())
s = env.reset()
for t in range(10000):
    values, idx = q(torch.tensor(s)).max(0)  # the values are trained on below
    s, r, done, _ = env.step(idx.item())
    loss = (values - r) ** 2
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
    )
    invalid: ClassVar[Tuple[str, ...]] = (
        """\
import torch


class Handler:
    def __init__(self, path):
        self.model = torch.jit.load(path)
        self.model.eval()

    def handle(self, batch):
        return self.model(batch).argmax(-1).tolist()  # expect: TL101
""",
        """\
import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        logits = model(x)  # expect: TL101
        correct += (logits.argmax(1) == y).sum().item()
    return correct
""",
        """\
import torch


def predict(model, batches):
    model.eval()
    labels = []
    for batch in batches:
        labels.extend(model(batch).argmax(-1).tolist())  # expect: TL101
    return labels
""",
        """\
import numpy as np
import torch
import torch.nn as nn


class QNet(nn.Module):
    def __init__(self, n_states, n_actions):
        super().__init__()
        self.fc = nn.Linear(n_states, n_actions)

    def forward(self, x):
        return self.fc(x)


class Agent:
    def __init__(self, n_states, n_actions):
        self.q, self.q_target = QNet(n_states, n_actions), QNet(n_states, n_actions)
        self.n_actions = n_actions

    def act(self, state, epsilon):
        if np.random.rand() < epsilon:
            action = np.random.randint(self.n_actions)
        else:
            values = self.q.forward(torch.as_tensor(state).unsqueeze(0))  # expect: TL101
            action = values.argmax(1).numpy()[0]
        return action


agent = Agent(4, 2)
state = np.zeros(4, dtype=np.float32)
for step in range(1000):
    action = agent.act(state, 0.1)
    state = np.random.rand(4).astype(np.float32)
""",
        """\
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(0)
E = torch.randn((27, 8), generator=g)
W = torch.randn((24, 27), generator=g)
params = [E, W]
for p in params:
    p.requires_grad = True

for step in range(100):
    ix = torch.randint(0, 27, (32, 3), generator=g)
    loss = F.cross_entropy(E[ix].view(32, -1) @ W, torch.randint(0, 27, (32,), generator=g))
    for p in params:
        p.grad = None
    loss.backward()
    for p in params:
        p.data -= 0.1 * p.grad

for _ in range(5):
    context, out = [0, 0, 0], []
    while True:
        logits = E[torch.tensor([context])].view(1, -1) @ W  # expect: TL101
        ix = torch.multinomial(F.softmax(logits, dim=1), 1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0:
            break
    print(out)
""",
        """\
import torch
import torch.nn.functional as F


class Dense:
    def __init__(self, n_in, n_out):
        self.weight = torch.randn(n_in, n_out) / n_in ** 0.5
        self.training = True

    def __call__(self, x):
        out = x @ self.weight
        return out if self.training else out * 1.0

    def parameters(self):
        return [self.weight]


layers = [Dense(10, 50), Dense(50, 10)]
for layer in layers:
    layer.training = False

tokens = [0]
for _ in range(20):
    x = F.one_hot(torch.tensor(tokens[-1:]), 10).float()
    for layer in layers:
        x = layer(x)  # expect: TL101
    tokens.append(torch.multinomial(F.softmax(x, dim=1), 1).item())
""",
        """\
import torch

decoder = torch.load("decoder.pt")
decoder.eval()


def caption(features, start, end, max_len=20):
    words = [start]
    h = features
    while len(words) < max_len:
        h = decoder.cell(decoder.embed(torch.tensor([words[-1]])), h)  # expect: TL101
        words.append(decoder.head(h).argmax(-1).item())  # the same loop and model: one finding
        if words[-1] == end:
            break
    return words
""",
        """\
import gym
import torch

env = gym.make("CartPole-v1")
q = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
s = env.reset()
for t in range(10000):
    values, idx = q(torch.tensor(s)).max(0)  # expect: TL101
    s, r, done, _ = env.step(idx.item())
""",
    )


def _no_grad_fix(file_model: FileModel, call: CallSite, span: Optional[Tuple[int, int]] = None) -> Optional[Fix]:
    """Wrap the loop around the forward pass (or its statement, outside loops) in ``no_grad``;
    only the statement when the evaluation is that statement alone (``q(obs).argmax().item()``
    between the updates of a training loop, which no_grad around the loop would stop)."""
    loop = call.site.loop
    if loop is not None and span is not None and not span[0] <= loop.start < loop.end <= span[1]:
        loop = None
    return _wrap_in_no_grad(file_model, call.scope, loop, call.node)


def _wrap_in_no_grad(file_model: FileModel, scope: Scope, loop: Optional[Loop],
                     node: cst.BaseExpression) -> Optional[Fix]:
    target = loop.node if loop is not None else enclosing_statement(file_model, node)
    if target is None or isinstance(target, (cst.FunctionDef, cst.ClassDef)) or file_model.derived(_suspends, target):
        return None  # a one-line suite, or a generator/coroutine that would leak no_grad to its caller
    name, imports = torch_reference(file_model, "no_grad")
    if shadowed(scope, name.split(".")[0]):
        return None  # ``def evaluate(model, torch)``: the name would not reach the module
    what = "loop" if loop is not None else "statement"
    # Under the new no_grad a volatile Variable inside is dead code; left there, it
    # would look fixed (TL105 is silent under no_grad) while still in the file.
    return Fix(f"wrap the evaluation {what} in `with {name}():`",
               ((target, wrap_in_with(without_volatile(file_model, target), name)),), imports)


def _suspends(file_model: FileModel, target: cst.CSTNode) -> bool:
    """``edits.suspends``, asked once per loop: the forwards of one loop share its fix's question;
    not asked where the file suspends nowhere (most training code)."""
    return file_model.suspends_somewhere and suspends(target)


def _generates(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """A step-by-step loop (``range``, ``while``: decoding, sampling, generating) in a function
    named for generating or predicting, that hands back no graph and keeps none. The encoder
    pass before a decoding loop belongs to it."""
    if not (is_generation_function_name(scope.name) or is_eval_function_name(scope.name)):
        return False
    if call.site.loop is None and not _decodes(file_model, scope):
        return False
    if _returns_a_graph(file_model, scope):
        return False  # REINFORCE: the caller backpropagates the log-probabilities
    return not _keeps_graph(file_model, scope)


def _loop_of_the_module(file_model: FileModel, scope: Scope, call: CallSite, span: Tuple[int, int]) -> Tuple[int, int]:
    """At module level (a script, a notebook), the outermost loop of ``span`` around the call,
    when no backward consumes what it computes: a later cell that computes gradients for a
    demonstration of its own does not make the sampling loop above need them."""
    loop = call.site.loop
    if not scope.is_module or loop is None:
        return span
    while loop.parent is not None and loop.parent.start >= span[0]:
        loop = loop.parent
    if loop.start < span[0] or _loop_feeds_a_backward(file_model, scope, loop):
        return span
    return (loop.start, loop.end)


def _outermost(loop: Optional[Loop]) -> Optional[Loop]:
    while loop is not None and loop.parent is not None:
        loop = loop.parent
    return loop


def _outermost_step_loop(loop: Optional[Loop]) -> Optional[Loop]:
    """The outermost loop around ``loop`` when some loop there is a ``while`` or runs over
    ``range``: a step-by-step loop, not a pass over data."""
    steps, outer = False, None
    while loop is not None:
        steps = steps or loop.iter is None or _is_range(loop.iter)
        outer, loop = loop, loop.parent
    return outer if steps else None


def _reads_numbers(scope: Scope, loop: Loop) -> bool:
    """Does the loop read Python numbers off its tensors (``multinomial(...).item()``)?"""
    return any(loop.contains(c.order) and _is_cut(c) for c in scope.calls)


def _reads_numbers_anywhere(scope: Scope) -> bool:
    """Does the scope read Python numbers off a tensor somewhere (``.item()``, ``.argmax()``)?"""
    return any(map(_is_cut, scope.calls))


def _is_cut(call: CallSite) -> bool:
    """``x.item()``, ``int(x)``, ``torch.argmax(x)``: a Python number or index read off a tensor."""
    return call.method in _CUTS or (call.callee or "").rsplit(".", 1)[-1] in _CUTS


def _steps_a_part(file_model: FileModel, scope: Scope, call: CallSite, models: Set[str]) -> bool:
    """``decoder.decode_step(x, (h, c))``, ``decoder.fc(h)`` in a ``range``/``while`` loop
    (beam search, greedy decoding): a part of a model the code put in eval mode, run step
    by step. Methods that run their own inference (``generate``, ``sample``) are not parts."""
    if not _in_step_loop(call) or not file_model.is_submodule_forward(call):
        return False
    holder, method = call.receiver, call.method
    assert holder is not None and method is not None  # a submodule forward has both
    holder = unwrapped_module(holder)
    if holder == "self" or not _may_run_layers(file_model, method):
        return False
    return holder in models or (not scope.is_module and _global_model_in_eval(file_model, scope, holder))


# Methods that build inputs rather than run layers, when their class is out of sight.
_BUILDS_INPUTS = ("make_", "build_", "create_")


def _may_run_layers(file_model: FileModel, method: str) -> bool:
    """A model class of this file that defines ``method`` runs layers in it (``self.fc(h)``,
    ``self(x)``); ``make_trg_mask`` only compares and builds tensors. With no such class in
    sight, a method named for building inputs is taken for one that does."""
    defined = file_model.derived(_model_methods_named, method)
    if not defined:
        return not method.startswith(_BUILDS_INPUTS)
    return any(_runs_layers(file_model, m, set()) for m in defined)


def _runs_layers(file_model: FileModel, method: Scope, seen: set) -> bool:
    """Does the method call ``self(...)``, ``self.forward`` or an attribute of ``self`` that
    is no method of its class (a submodule), or a sibling method that does, with grad on?"""
    if id(method) in seen or method.decorator_grad is GradMode.NO_GRAD:
        return False  # ``@torch.no_grad() def act(...)`` records nothing for its caller
    seen.add(id(method))
    for call in method.calls:
        if call.site.grad is GradMode.NO_GRAD:
            continue
        callee = call.callee or ""
        if callee in ("self", "self.forward"):
            return True
        head, _, attr = callee.partition(".")
        if head != "self" or not attr or "." in attr:
            continue
        sibling = file_model.methods.get((method.class_name, attr)) if method.class_name is not None else None
        if sibling is None or _runs_layers(file_model, sibling, seen):
            return True
    return False


def _in_step_loop(call: CallSite) -> bool:
    """Inside a ``while`` loop or a loop over ``range(...)``: one step after another."""
    loop = call.site.loop
    while loop is not None:
        if loop.iter is None or _is_range(loop.iter):
            return True
        loop = loop.parent
    return False


def _global_model_in_eval(file_model: FileModel, scope: Scope, target: Optional[str]) -> bool:
    """``model.eval()`` at module level, ``def detect(image): model(image)``: the module's own
    model, put in eval mode and never back in training mode anywhere in the file."""
    if target is None:  # no model this file can name (``utils.decoder.step(h)``)
        return False
    root = target.split(".", 1)[0]
    if root in scope.params or root == "self" or any(
        root in bound_paths(t) for a in scope.assignments for t in a.targets
    ):
        return False
    switches = modes.mode_switches(file_model, file_model.calls)
    mine = [s for s in switches if modes.same_model(s.receiver, target)]
    return bool(mine) and all(s.to_eval is True and s.call.scope.is_module for s in mine)


# ``.data`` counts where it is indexed (``.data[0]``, the number of code older than 0.4);
# a bare ``.data`` is a detached tensor, not a number.
_NUMBER_CUTS = NUMBERS_OF_AN_OUTPUT


def _hands_back_numbers(file_model: FileModel, scope: Scope) -> bool:
    """Every value the function returns went through ``.numpy()``, ``.item()``, ``argmax``...
    on its way (``action = torch.max(q, 1)[1].data.numpy()``): no graph reaches the caller.
    Other bindings of the returned name may reshape it or draw a random action instead
    (``action = np.random.randint(n)``), as long as they read no graph-carrying name."""
    if not scope.returns:
        return False
    for _, value in scope.returns:
        if _cuts(value):
            continue
        names = set(identifiers(value))
        sources = [a for a in scope.assignments
                   if a.value is not None and any(n in bound_paths(t) for t in a.targets for n in names)]
        if not names or not sources or not all(
                _cuts(a.value) or _reads_no_graph(file_model.taint(scope), a, names) for a in sources):
            return False
        if not any(_cuts(a.value) for a in sources):
            return False
    return True


def _reads_no_graph(taint: Taint, assignment: Assignment, returned: set) -> bool:
    """Built from the returned names themselves, or from names holding no graph."""
    held = taint.names_at(assignment.order)
    value = assignment.value
    assert value is not None  # asked of bindings with a value
    return not taint.carries_graph(value, assignment.order) and all(
        n in returned or n not in held for n in identifiers(value))


def _cuts(node: Optional[cst.BaseExpression]) -> bool:
    """Does ``node`` read a number off a tensor somewhere (``.item()``, ``int(...)``)?"""
    if node is None:  # asked of bindings with a value and of returned values: never
        return False
    found: List[cst.CSTNode] = []

    def enter(n: cst.CSTNode) -> None:
        if (isinstance(n, cst.Attribute) and n.attr.value in _NUMBER_CUTS) or (
                isinstance(n, cst.Call) and dotted(n.func) in ("int", "float")) or _indexes_data(n):
            found.append(n)

    walk(node, enter, lambda n: None)
    return bool(found)


def _indexes_data(node: cst.CSTNode) -> bool:
    """``q.max(1)[1].data[0]``."""
    return isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "data"


def _decodes(file_model: FileModel, scope: Scope) -> bool:
    """Does a ``range``/``while`` loop of the function run a model step by step?"""
    return any(
        c.site.loop is not None and (c.site.loop.iter is None or _is_range(c.site.loop.iter))
        and file_model.is_forward(c)
        for c in scope.calls
    )


def _returns_a_graph(file_model: FileModel, scope: Scope) -> bool:
    returned = file_model.returns_graph(scope)
    return any(returned) if isinstance(returned, tuple) else bool(returned)


def _keeps_graph(file_model: FileModel, scope: Scope) -> bool:
    """Values stored where a caller can reach them: ``self.log_probs.append(...)``, or
    ``model.saved_actions.append(SavedAction(log_prob, value))`` (what a constructor wraps
    cannot be told, so any store into a container that outlives the call counts), or handed
    to a method of the file that appends or sums its argument into its object
    (``pi.put_data((r, prob[a]))``)."""
    local = {p for a in scope.assignments for t in a.targets for p in bound_paths(t)}
    keepers = file_model.derived(Meters)
    # the scope's taint (a replay of its assignments) is asked only of what a call may keep
    for call in scope.calls:
        if any(file_model.taint(scope).carries_graph(arg, call.order) for arg in keepers.kept_arguments(call)):
            return True  # ``pi.put_data((r, prob[a]))``: a method of the file stores it on its object
        if call.method not in CONTAINER_METHODS or call.receiver is None:
            continue
        if call.receiver.split(".", 1)[0] not in local or "." in call.receiver:
            return True
        if any(file_model.taint(scope).carries_graph(a.value, call.order) for a in call.node.args):
            return True
    return any(
        a.kind in ("assign", "aug") and any(isinstance(t, (cst.Attribute, cst.Subscript)) for t in a.targets)
        and file_model.taint(scope).carries_graph(a.value, a.order)
        for a in scope.assignments
    )


def _runs_on_held_out_data(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """``cnn(test_x)`` every few steps of a training loop: a forward on held-out data whose
    result no backward consumes. Once, outside a loop (a plot of the predictions), it is no hazard."""
    if call.site.loop is None:
        return False
    if not any(is_eval_data_name(n) for a in call.node.args for n in identifiers(a.value)):
        return False
    stmt = call.site.stmt
    if not isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.Expr)) or file_model.flows_to_return(call):
        return False
    consumed = consumed_by_backward(file_model, scope)
    targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else (
        [stmt.target] if isinstance(stmt, cst.AnnAssign) else [])
    return not any(p in consumed for t in targets for p in bound_paths(t))


def _pure_inference(file_model: FileModel, scope: Scope, call: CallSite) -> Optional[Tuple[int, int]]:
    """A forward whose graph nothing can use: choosing an action (``net(state).argmax().item()``),
    sampling characters in a loop. The function computes no gradient, returns no graph and
    keeps none where a caller could reach it; at module level, a loop whose values no backward
    consumes. Hooks are a side channel we cannot follow: files that register them are left alone."""
    if _registers_hooks(file_model) or _freezes_parameters(file_model):
        return None  # a frozen model records no graph: who is frozen, we cannot always tell
    if file_model.names.imported_roots & _TRACING_LIBRARIES:
        return None  # pyro's model and guide functions hand their tensors to SVI's trace
    if scope.is_module:
        loop = call.site.loop
        if loop is None or _loop_feeds_a_backward(file_model, scope, loop) or not _reads_numbers_anywhere(scope):
            return None  # a benchmark that only times forwards reads nothing off them
        return (loop.start, loop.end)
    if not _runs_as_a_script(file_model):
        return None  # a library's function: its callers, and their grad mode, are elsewhere
    if _returns_a_graph(file_model, scope):
        return None
    if _keeps_graph(file_model, scope) or scope.name in ("closure", "__call__"):
        return None
    return (scope.start, scope.end)


def _only_numbers(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """``action = q(obs).argmax().item()`` at every environment step, also between the updates
    of a training loop: the forward's output becomes numbers in its own statement, so nothing
    can backpropagate through it, whatever else the loop trains. Not on inputs that carry a
    graph (``D(fake).mean().item()`` on a GAN's generated batch: a look at the training
    computation itself). What ``_pure_inference`` leaves alone (hooks, frozen models, tracing
    libraries, a library's functions) stays so."""
    if not (read_as_numbers(file_model, call) or bound_then_read_as_numbers(file_model, call)) \
            or forwards_that_train(file_model):
        return False
    if any(file_model.taint(scope).carries_graph(arg.value, call.order) for arg in call.node.args):
        return False
    if _registers_hooks(file_model) or _freezes_parameters(file_model):
        return False
    if file_model.names.imported_roots & _TRACING_LIBRARIES:
        return False
    return scope.is_module or _runs_as_a_script(file_model)


def _acts_with_a_model_of_the_file(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """An acting forward whose output is bound to a name only read as numbers
    (``bound_then_read_as_numbers``), through a model of a class of this file that the roles
    may not name: ``model.pi(s)`` (a method that runs the model's layers), or ``mu(s)`` after
    ``mu, mu_target = MuNet(), MuNet()`` in the same function (the file's other ``mu``, a
    parameter or a local of ``forward``, keeps the roles from calling every ``mu`` a model).
    The methods run must keep no graph on their object and compute no gradient."""
    # the methods are told from the file's classes, cheaply; the output's reads, which walk
    # the statements after the call, only then
    methods = _methods_run(file_model, scope, call)
    if not methods or not bound_then_read_as_numbers(file_model, call):
        return False
    return all(
        not _keeps_graph(file_model, m) and not any(
            file_model.needs_autograd(c) for c in file_model.reachable_calls(m))
        for m in methods)


def _methods_run(file_model: FileModel, scope: Scope, call: CallSite) -> Sequence[Scope]:
    """The methods of this file's model classes that ``call`` runs (none when one is out of sight)."""
    if call.callee is None:
        return []
    if "." not in call.callee:
        methods = []
        for cls in _classes_built_here(file_model, scope, call.callee):
            forward = file_model.methods.get((cls, "forward"))
            if forward is None:
                return []  # a forward inherited or built elsewhere: what it keeps is out of sight
            methods.append(forward)
        return methods
    if call.receiver == "self" or call.method is None:
        return []
    # the file's model methods of that name first: most calls name none (``append``, ``item``),
    # and the submodule question costs several lookups of names each
    named = file_model.derived(_model_methods_named, call.method)
    if not named or not file_model.is_submodule_forward(call):
        return ()
    return named if all(_runs_layers(file_model, m, set()) for m in named) else ()


def _model_methods_named(file_model: FileModel, name: str) -> Tuple[Scope, ...]:
    """The methods called ``name`` of this file's model classes, in the file's order (asked
    of every call of a submodule, by name)."""
    return tuple(m for (cls, method), m in file_model.methods.items() if method == name
                 and (file_model.is_module_class(cls) or cls in file_model.roles.model_classes))


def _classes_built_here(file_model: FileModel, scope: Scope, name: str) -> Set[str]:
    """The module classes of this file that every binding of ``name`` in ``scope`` builds
    (``mu, mu_target = MuNet(), MuNet()``); none when one binding is anything else."""
    if scope.is_module or name in scope.params:
        return set()
    classes = set()
    for value in file_model.derived(_bound_values_by_path, scope).get(name, ()):
        cls = dotted(value.func) if isinstance(value, cst.Call) else None
        if cls is None or not file_model.is_module_class(cls):
            return set()
        classes.add(cls)
    return classes


def _bound_values_by_path(file_model: FileModel, scope: Scope) -> Dict[str, List[Optional[cst.BaseExpression]]]:
    """``path -> the values bindings in scope give it`` (``expr.bound_values``; None for a
    binding other than ``=``), in source order: asked per call, read once per scope."""
    index: Dict[str, List[Optional[cst.BaseExpression]]] = {}
    for a in scope.assignments:
        for t in a.targets:
            for path, value in bound_values(t, a.value if a.kind == "assign" else None):
                index.setdefault(path, []).append(value)
    return index


def _runs_as_a_script(file_model: FileModel) -> bool:
    """Does the module run code of its own (top-level loops, calls of its own functions, a
    ``__main__`` block, a notebook's cells)? Then the callers of its functions are in view."""
    return file_model.derived(_script)


def _script(file_model: FileModel) -> bool:
    """Module-level loops, or a bare call of the file's own function (``main()``, ``train(model)``,
    in a ``__main__`` block too); not ``default_cfgs = build_cfgs(...)``, which libraries do."""
    module = file_model.module_scope
    return bool(module.loops) or any(
        isinstance(c.site.stmt, cst.Expr) and c.site.stmt.value is c.node and file_model.resolve(c) is not None
        for c in module.calls
    )


# Libraries that record what a function computes through effect handlers, not return values.
_TRACING_LIBRARIES = frozenset(("pyro", "numpyro", "funsor"))


def _freezes_parameters(file_model: FileModel) -> bool:
    """``requires_grad_(False)``, ``p.requires_grad = False`` or Lightning's ``model.freeze()``
    anywhere in the file (asked of each forward the check weighs: kept)."""
    return file_model.derived(_parameters_frozen)


def _parameters_frozen(file_model: FileModel) -> bool:
    for call in file_model.calls:
        if call.method == "requires_grad_" and call.node.args and literal_bool(call.node.args[0].value) is False:
            return True
        if _lightning_freeze(call):
            return True
    return any(
        a.kind == "assign" and literal_bool(a.value) is False
        and any(isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" for t in a.targets)
        for a in file_model.assignments
    )


def _lightning_freeze(call: CallSite) -> bool:
    """``model.freeze()``: a LightningModule sets ``requires_grad = False`` on every parameter
    (and switches to eval mode). Given arguments, it is some other object's freeze."""
    return call.method == "freeze" and call.receiver is not None and not call.node.args


def _registers_hooks(file_model: FileModel) -> bool:
    return file_model.derived(_hooks_registered)


def _hooks_registered(file_model: FileModel) -> bool:
    return any((c.method or "").startswith("register_") and "hook" in (c.method or "") for c in file_model.calls)


def _loop_feeds_a_backward(file_model: FileModel, scope: Scope, loop: Loop) -> bool:
    """Does a value bound in the loop (or kept by it) reach a backward of the module?
    Not when every backward of the module runs before the loop (sampling after training).
    Kept per loop: asked again for each forward the loop runs."""
    return file_model.derived(_feeds_a_backward, scope, loop)


def _feeds_a_backward(file_model: FileModel, scope: Scope, loop: Loop) -> bool:
    backwards = [c for c in file_model.reachable_calls(scope)
                 if loop.start <= c.order and file_model.is_differentiation(c)]
    if not backwards:
        return False
    if scope.is_module and all(c.scope is scope and c.order >= loop.end for c in backwards):
        # Later cells of a notebook: follow each backward's values back, in order.
        return any(_reaches_into(file_model, scope, c, loop) for c in backwards)
    consumed = consumed_by_backward(file_model, scope)
    for a in scope.assignments:
        if loop.contains(a.order) and any(p in consumed for t in a.targets for p in bound_paths(t)):
            return True
    stores = [c for c in scope.calls if loop.contains(c.order) and c.method in CONTAINER_METHODS]
    if not stores:
        return False  # the scope's taint, a replay of all its assignments, only when one may keep a graph
    taint = file_model.taint(scope)
    return any(taint.carries_graph(arg.value, c.order) for c in stores for arg in c.node.args)


def _reaches_into(file_model: FileModel, scope: Scope, backward: CallSite, loop: Loop) -> bool:
    """Does a backward after ``loop`` differentiate something the loop bound or stored?
    Walks the statements between them backwards: ``x = w @ inp`` rebinds ``x``, so the
    ``x`` of the loop above is not what ``loss.backward()`` reaches."""
    live = set(read_paths(backward.node))
    source = differentiated(backward)
    if source is not None:
        live.update(read_paths(source))
    between: List[Union[Assignment, CallSite]] = [
        a for a in scope.assignments if loop.end <= a.order < backward.order and a.value is not None]
    stores: List[Union[Assignment, CallSite]] = [
        c for c in scope.calls if loop.end <= c.order < backward.order and c.method in STORE_METHODS and c.receiver]
    for event in sorted(between + stores, key=lambda e: e.order, reverse=True):
        if not isinstance(event, CallSite):
            bound = {p for t in event.targets for p in bound_paths(t)}
            if not bound & live:
                continue
            if event.kind == "assign":
                live -= {dotted(t) for t in event.targets}  # a whole rebinding ends the old value
            if event.value is not None:  # as ``between`` has them all
                live.update(read_paths(event.value))
        elif event.receiver in live:
            live.update(p for arg in event.node.args for p in read_paths(arg.value))
    in_loop: Set[Optional[str]] = {
        p for a in scope.assignments if loop.contains(a.order) for t in a.targets for p in bound_paths(t)}
    in_loop.update(c.receiver for c in scope.calls if loop.contains(c.order) and c.method in STORE_METHODS)
    return bool(live & in_loop)


def _runs_what_it_is_given(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """The forward runs a model the function was handed (``measure(net, batches)``):
    what its evaluating callers pass decides what it is."""
    target = file_model.forward_target(call)
    return target is not None and target.split(".", 1)[0] in scope.params


def _before_guarded_backward(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """A forward in the iteration of a backward that only a train flag or phase guards."""
    if guarded_training(file_model, scope) is None or call.site.loop is None:
        return False
    loop = call.site.loop
    return any(file_model.is_backward(c) and loop.contains(c.order) and c.order > call.order
               for c in scope.calls)


# Methods a server or a user calls once per request (Lightning's ``predict_step`` runs without grad;
# ``__call__`` is a forward of its own, whose graph the caller may want).


def _serves_numbers(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """``def predict(self, x): self.eval(); return self(x).argmax(-1).tolist()``, or a handler
    whose ``__init__`` put ``self.model`` in eval mode: a method called once per request that
    hands back numbers and computes no gradient. Every call records a graph nobody can use."""
    if scope.class_name is None or scope.name not in SERVING_METHODS:
        return False
    if not (read_as_numbers(file_model, call) or _hands_back_numbers(file_model, scope)):
        return False
    if any(file_model.needs_autograd(c) for c in file_model.reachable_calls(scope)):
        return False
    target = file_model.forward_target(call)
    if target is None:
        return False
    init = file_model.methods.get((scope.class_name, "__init__"))
    switches = mode_switches(file_model, scope) + (mode_switches(file_model, init) if init is not None else [])
    return any(is_eval and modes.same_model(receiver, target) for _, receiver, is_eval in switches)


def _for_a_look(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """A forward to look at the model (a plot, saved images, a shape, a few-step demo),
    not one over evaluation data (a loader, the test set at once)."""
    if _on_eval_data(call) or _in_data_loop(file_model, scope, call):
        return False
    return shown_only(file_model, call) or runs_a_few_times(file_model, call)


def _loop_and_model(call: CallSite) -> Optional[Tuple[int, str]]:
    """The loop holding the forward and the model it runs (``decoder`` of ``decoder.fc(h)``):
    a beam search through five of a decoder's parts is one evaluation, one finding."""
    if call.site.loop is None or call.callee is None:
        return None
    return id(call.site.loop), call.callee.split(".", 1)[0]


def _on_eval_data(call: CallSite) -> bool:
    """A forward over a whole evaluation set at once: ``model(x_test)``, ``net(X_val.to(device))``,
    ``likelihood(model(test_x))`` (not one sample of it, ``model(x_test[:1])``)."""
    return any(_reads_eval_data(arg.value) for arg in call.node.args)


def _reads_eval_data(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call):
        receiver = expr.func.value if isinstance(expr.func, cst.Attribute) else None
        return (receiver is not None and _reads_eval_data(receiver)) or any(
            _reads_eval_data(arg.value) for arg in expr.args)
    path = dotted(expr)
    return path is not None and is_eval_data_name(path.rsplit(".", 1)[-1])


def _handles_grad(scope: Scope) -> bool:
    """The code sets requires_grad itself: it froze the model (Lightning's ``freeze()`` too)
    or wants input gradients."""
    if any(call.method == "requires_grad_" or _lightning_freeze(call) for call in scope.calls):
        return True
    return any(
        isinstance(t, cst.Attribute) and t.attr.value == "requires_grad"
        for a in scope.assignments for t in a.targets
    )


def _in_data_loop(file_model: FileModel, scope: Scope, call: CallSite) -> bool:
    """Inside a loop over a loader, or over data the function was given."""
    loop = call.site.loop
    while loop is not None:
        if file_model.loop_role(loop).data:
            return True
        if loop.iter is not None and not _is_range(loop.iter):
            if set(identifiers(loop.iter)) & set(scope.params):
                return True
        loop = loop.parent
    return False


def _is_range(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and dotted(expr.func) in ("range", "reversed", "enumerate") and (
        dotted(expr.func) == "range" or (bool(expr.args) and _is_range(expr.args[0].value))
    )
