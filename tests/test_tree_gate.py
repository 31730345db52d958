"""The tree gate's questions, one by one; test_fast_paths checks that gating never
changes findings on the fixtures and corpus."""
from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from conftest import STORED_LOSS, without_gates
from torchlint.engine import _tree_gated, lint_source
from torchlint.model.vocab import is_loader_name
from torchlint.rules import ALL_RULES, RULES_BY_CODE
from torchlint.needs import LoopOver
from torchlint.tree_gate import TreeIndex, activation_may_reach_loss


def facts(source: str) -> TreeIndex:
    source = textwrap.dedent(source)
    return TreeIndex(ast.parse(source), source)


def test_code_text_blanks_the_inside_of_docstrings_only():
    source = ('def f(model):\n'
              '    """Train.\n'
              '    >>> loss.backward()\n'
              '    """; loss.backward()\n'
              '    s = """\n'
              '    kept: not a bare string statement\n'
              '    """\n')
    code = facts(source).code_text()
    assert code.split("\n") == ['def f(model):', '    """Train.', '', '    """; loss.backward()',
                                '    s = """', '    kept: not a bare string statement', '    """', '']


def test_code_text_leaves_sources_with_carriage_returns_whole():
    source = 'def f():\r\n    """a\r\n    loss.backward()\r\n    """\r\n'
    assert TreeIndex(ast.parse(source), source).code_text() == source


GAN_DOCSTRING_ONLY = '''
import torch

class Generator(torch.nn.Module):
    """Example:

    >>> fake = netG(z)
    >>> errD = criterion(netD(fake), label)
    >>> errD.backward()
    """
    def forward(self, z):
        return z
'''

GAN_LOOP = '''
import torch

def train(netG, netD, optD, criterion, loader):
    """Trains a GAN."""
    for z, label in loader:
        fake = netG(z)
        errD = criterion(netD(fake), label)
        optD.zero_grad()
        errD.backward()
        optD.step()
'''


def test_a_backward_call_written_only_in_a_docstring_is_no_reason_to_parse():
    tl405 = RULES_BY_CODE["TL405"]
    for source, kept in ((GAN_DOCSTRING_ONLY, []), (GAN_LOOP, [tl405])):
        assert tl405.may_apply(source)
        assert _tree_gated([tl405], ast.parse(source), source, "train.py") == kept


@pytest.mark.parametrize("source", [GAN_DOCSTRING_ONLY, GAN_LOOP])
def test_gating_keeps_the_findings(source, monkeypatch):
    gated = lint_source(source, "gan.py", ALL_RULES).diagnostics
    without_gates(monkeypatch)
    assert lint_source(source, "gan.py", ALL_RULES).diagnostics == gated


@pytest.mark.parametrize("source, expected", [
    ("def f(model, x):\n    model.eval()\n    return model(x)\n", True),
    ("def f(teacher, x):\n    teacher.eval()\n    return teacher.forward(x)\n", True),  # switched, not model-named
    ("def f(net, x):\n    net.train(mode=False)\n    y = net(x)\n", True),
    ("def f(net, x):\n    net.train(0)\n    y = net(x)\n", True),
    ("def f(net, x):\n    net.train()\n    y = net(x)\n", False),  # training mode
    ("def f(net, x):\n    net.train(flag)\n    y = net(x)\n", False),  # unknown: not a switch to eval
    ("def f(net):\n    net.eval()\n\ndef g(net, x):\n    return net(x)\n", False),  # other scopes
    ("class A:\n    def run(self, x):\n        self.eval()\n        return self(x)\n", True),
    ("def f(x):\n    enc.eval()\n    return tokenize(x)\n", False),  # nothing switched is run
])
def test_evaluation_switches_need_a_switch_and_a_run_in_one_scope(source, expected):
    # Each function runs more than once (the rule reports no one-off forward); no evaluation
    # names, so TL101's other reasons (an evaluation loop, held-out data) stay silent.
    driver = "for _ in range(3):\n    f(net, x)\n    g(net, x)\n    A().run(x)\n"
    assert RULES_BY_CODE["TL101"].needs_tree(facts(source + driver)) is expected
    assert RULES_BY_CODE["TL101"].needs_tree(facts(source)) is False  # one forward, once


@pytest.mark.parametrize("source, expected", [
    ("def f(model, x):\n    model.eval()\n    for b in x:\n        y = model(b)\n", True),  # a loop of its own
    ("def f(model, x):\n    model.eval()\n    return [model(b) for b in x]\n", True),
    ("def f(model, x_test):\n    model.eval()\n    return model(x_test.cuda())\n", True),  # a whole test set
    ("def f(model, x):\n    model.eval()\n    return model(x)\ndef g(model, xs):\n    for x in xs:\n"
     "        h(model, x)\ndef h(model, x):\n    f(model, x)\n", True),  # run from a loop, at a remove
    ("class A:\n    def __init__(self, config):\n        self.eval()\n        self.decoder = Decoder(config)\n",
     False),  # a model library's part built once
])
def test_switched_forwards_must_repeat_or_read_evaluation_data(source, expected):
    assert RULES_BY_CODE["TL101"].needs_tree(facts(source)) is expected


@pytest.mark.parametrize("source, expected", [
    ("def f(model, x):\n    loss = model(x).mean()\n    loss.requires_grad = True\n", True),
    ("def f(criterion, out, y):\n    criterion(out, y).requires_grad_()\n", True),
    ("def f():\n    bias = torch.zeros(3).to('cuda')\n    bias.requires_grad = True\n", False),
    ("def f(x):\n    y = x.half().requires_grad_()\n", False),
    ("def f(x):\n    x.clone().requires_grad_()\n", False),
    ("def f(block, x):\n    h = block(x)\n    h.requires_grad = True\n", True),
    # bound from a call only after it is forced (a checkpointed encoder's input): the rule reads
    # the binding before the forcing, a slice of the input
    ("def f(convs, x):\n    h = x[:, None]\n    h.requires_grad = True\n    for c in convs:\n"
     "        h = c(h)\n", False),
    ("def f(x):\n    loss.requires_grad = True\n    loss = 0\n", False),  # bound after: state set elsewhere
    ("def f(model, x, y):\n    out, aux = model(x), 0\n    out.requires_grad = True\n", True),  # unpacked
    ("def f(model, x):\n    h = model(x)\n    for _ in range(3):\n        h.requires_grad_()\n"
     "        h = h * 2\n", True),
])
def test_forced_requires_grad_on_computed_values(source, expected):
    assert RULES_BY_CODE["TL403"].needs_tree(facts(source)) is expected


GATE_REGRESSIONS = sorted((Path(__file__).resolve().parent / "data" / "regressions").glob("gate_*.py"))


@pytest.mark.parametrize("path", GATE_REGRESSIONS, ids=lambda p: p.name)
def test_inputs_where_a_gate_once_hid_a_finding(path, monkeypatch):
    """Found by the long fuzz run (a class body in a loop, lines ended by \\r) and by reading
    each gate against its rule (an unpacked tuple, an aliased or annotated parameter)."""
    data = path.read_bytes()
    gated = lint_source(data, path.name, ALL_RULES).diagnostics
    without_gates(monkeypatch)
    assert gated == lint_source(data, path.name, ALL_RULES).diagnostics != []


def test_bodies_mentioning_are_the_scopes_whose_statements_span_the_text():
    source = ("import torch\n"
              "def a(x):\n    return x + 1\n"
              "def b(x):\n    x.requires_grad_()\n    return x\n"
              "w = torch.zeros(3, requires_grad=True)\n")
    found = facts(source).bodies_mentioning("requires_grad")
    assert [[stmt.lineno for stmt in body] for body in found] == [[1, 2, 4, 7], [5, 6]]


@pytest.mark.parametrize("source, expected", [
    ("for x, y in train_loader:\n    pass\n", True),
    ("def f(self):\n    for batch in self.val_dl:\n        pass\n", True),
    ("for i in range(num_batches):\n    pass\n", False),  # counts batches, is no loader
    ("while loader:\n    pass\n", False),  # a while loop iterates over nothing
])
def test_loop_over_reads_what_for_loops_iterate_over(source, expected):
    assert LoopOver(is_loader_name).found_in(facts(source)) is expected


METER = "class Meter:\n    def update(self, val):\n        self.sum += val\n\n\nmeter = Meter()\n"


@pytest.mark.parametrize("code, source, expected", [
    ("TL301", "def f(loader, model):\n    for x in loader:\n        outs.append(model(x))\n", True),
    ("TL301", "def forward(self, xs):\n    for x in xs:\n        self.outs.append(x)\n", False),
    ("TL301", "def f(loader):\n    for x in loader:\n        print(x)\n", False),  # nothing stored
    ("TL401", "import torch\nw = torch.zeros(3, requires_grad=True)\nw.add_(1)\n", True),
    ("TL401", "import torch\nw = torch.zeros(3)\nw.add_(1)\n", False),  # no leaf wants grad
    ("TL401", "def f(w):\n    w.add_(1)\nw = nn.Parameter(x)\n", False),  # the write is not at import
    ("TL401", "class Net(nn.Module):\n    def __init__(self):\n        self.w = nn.Parameter(t)\n"
              "    def forward(self, x):\n        self.w.clamp_(0)\n", True),
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        self.fc.weight[0] = 0\n", True),
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        clip_(self.fc.weight)\n"
              "def clip_(w):\n    w.clamp_(0)\n", True),  # a helper handed a layer's weight
    # a forward's own argument, a counter and a cache of self: no parameter
    ("TL401", "class Net(nn.Module):\n    def forward(self, x, r):\n        x += r\n        self.calls += 1\n"
              "        self.cache[0] = x\n        return x\n", False),
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        y = x * 2\n        y.clamp_(0)\n", False),
    # building Net runs nothing that writes; a library's config helper called at import neither
    ("TL401", "def fill_(t):\n    t[0] = 0\nclass Net:\n    pass\nnet = Net()\n", False),
    ("TL401", "def _cfg(**kw):\n    return dict(kw)\ncfgs = {'a': _cfg(url='')}\n", False),
    # a config helper grows lists it made (never a leaf); a tensor, a parameter, a layer's weight
    # or a name bound again by a loop may be one
    ("TL401", "def _blocks(d):\n    out = []\n    for i in range(d):\n        out += [i]\n    mat = np.zeros(4)\n"
              "    mat[0] = 1\n    return out\ncfgs = _blocks(3)\n", False),
    ("TL401", "def _init():\n    w = torch.zeros(3, requires_grad=True)\n    w += 1\nweights = _init()\n", True),
    ("TL401", "def _init(w=None):\n    w += 1\nweights = _init()\nweights.requires_grad = True\n", True),
    ("TL401", "def _init():\n    lin = nn.Linear(2, 2)\n    lin.weight.add_(1)\nlayer = _init()\n", True),
    ("TL401", "def _init(m):\n    p = []\n    for p in m.parameters():\n        p.add_(1)\nlayer = _init(net)\n",
     True),
    ("TL401", "def _init():\n    w = []\n    w.add_(1)\n    w = nn.Parameter(t)\nlayer = _init()\n", True),
    # a module-level write to what may be a model's parameter: a layer's weight, an nn.Parameter
    # of a class of the file; a counter written at import time is none
    ("TL401", "head = nn.Linear(4, 2)\nhead.bias.zero_()\n", True),
    ("TL401", "class Net(nn.Module):\n    def __init__(self):\n        self.gain = nn.Parameter(t)\n"
              "model = Net()\nmodel.gain[0] = 1\n", True),
    ("TL401", "head = nn.Linear(4, 2)\nstats.count += 1\n", False),
    # Net's __init__ calls a function that writes, or its base's does: building Net runs it (the
    # Parameter is the leaf the text asks to see spelled)
    ("TL401", "def fill_(t):\n    t[0] = 0\nclass Net:\n    def __init__(self):\n        self.w = Parameter(t)\n"
              "        fill_(self.w)\nnet = Net()\n", True),
    ("TL401", "class Base:\n    def __init__(self):\n        self.w = Parameter(t)\n        self.w.zero_()\n"
              "class Net(Base):\n    pass\nnet = Net()\n", True),
    # under no_grad, harmless by name (detach_), or a backward only in a docstring's example
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        with torch.no_grad():\n"
              "            self.fc.weight.mul_(2)\n", False),
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        self.weight.detach_()\n", False),
    ("TL401", 'class Net(nn.Module):\n    """Use:\n    >>> loss.backward()\n    >>> w.add_(1)\n    """\n'
              "    def forward(self, x):\n        return x\n", False),
    # a helper handed a layer's weight writes another of its arguments (a cache): no parameter
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        step(self.state, self.conv.weight)\n"
              "def step(state, w):\n    state.copy_(w)\n", False),
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        step(self.state, w=self.conv.weight)\n"
              "def step(state, w):\n    w.copy_(state)\n", True),
    ("TL401", "class Net(nn.Module):\n    def forward(self, x):\n        self.step(self.conv.weight)\n"
              "    def step(self, w):\n        w.mul_(2)\n", True),  # a method: its self comes first
    # TL103: a prediction function the file calls, not a library's builder nobody here calls
    ("TL103", "def predict(model, x):\n    return model(x)\nmodel.train()\npredict(model, x)\n", True),
    ("TL103", "def test_effnet(**kw):\n    return build(**kw)\nself.head.train(self.training)\n", False),
    # and a model the file trains: a switch to training mode or a backward, not a mode passed on
    ("TL103", "def predict(model, x):\n    return model(x)\nhead.train(self.training)\npredict(model, x)\n", False),
    ("TL103", "def predict(model, x):\n    return model(x)\nmodel.train(mode=True)\npredict(model, x)\n", True),
    ("TL103", "def predict(model, x):\n    return model(x)\nmodel.train(1)\npredict(model, x)\n", True),
    ("TL103", "def predict(model, x):\n    return model(x)\nmodel.train(False)\npredict(model, x)\n", False),
    ("TL103", "def predict(model, x):\n    return model(x)\nloss.backward()\npredict(model, x)\n", True),
    # TL101: a forward under no_grad after eval(); a library's model file that runs no code
    # of its own (a config helper called at import) and reads numbers off a forward
    ("TL101", "def f(model, x):\n    model.eval()\n    with torch.no_grad():\n        y = model(x)\n", False),
    ("TL101", "def f(model, xs):\n    model.eval()\n    with torch.no_grad():\n        with torch.enable_grad():\n"
              "            ys = [model(x) for x in xs]\n", True),
    ("TL101", "def _cfg(**kw):\n    return kw\ncfgs = _cfg(url='')\ndef top1(model, x):\n"
              "    return model(x).argmax().item()\n", False),
    ("TL101", "def top1(model, x):\n    return model(x).argmax().item()\nif __name__ == '__main__':\n"
              "    top1(model, x)\n", True),
    # sampling with tensors trained by hand; frozen ones (requires_grad = False) train nothing
    ("TL101", "W = torch.randn(3, 3)\nW.requires_grad = True\nfor i in range(9):\n"
              "    ix = torch.multinomial(W[i], 1).item()\n", True),
    ("TL101", "W = torch.randn(3, 3)\nW.requires_grad = False\nfor i in range(9):\n"
              "    ix = torch.multinomial(W[i], 1).item()\n", False),
    # a generation loop in a method named for it, unless a no_grad decorator covers all of it
    ("TL101", "class D:\n    def sample(self, h):\n        for i in range(3):\n            h = self.lstm(h)\n", True),
    ("TL101", "class D:\n    @torch.no_grad()\n    def sample(self, h):\n        for i in range(3):\n"
              "            h = self.lstm(h)\n", False),
    ("TL101", "class D:\n    @torch.no_grad()\n    def sample(self, h):\n        for i in range(3):\n"
              "            with torch.enable_grad():\n                h = self.lstm(h)\n", True),
    ("TL101", "class D:\n    @smart_inference_mode()\n    def sample(self, h):\n        for i in range(3):\n"
              "            h = self.lstm(h)\n", True),  # a wrapper the model reads as unsure
    ("TL101", "class D:\n    def forward(self, h):\n        return self.decode(h)\n    def decode(self, h):\n"
              "        for i in range(3):\n            h = self.lstm(h)\n        return h\n", False),  # part of forward
    ("TL101", "def forward(h):\n    return self.decode(h)\ndef decode(h):\n    for i in range(3):\n"
              "        h = self.lstm(h)\n", True),  # a function, not a method: no self.decode runs it
    # the forward must run in the loop: an embedding before a loop that only reads numbers is no decoding
    ("TL101", "class D:\n    def generate(self, ids):\n        h = self.embed(ids)\n        for i in range(3):\n"
              "            h = h * 2\n        return h\n", False),
    ("TL101", "class D:\n    def generate(self, ids):\n        h = self.embed(ids)\n        while h.sum() < 9:\n"
              "            h = self.lstm(h)\n", True),
    # TL504: a static forward storing an argument, a view of one or a returned name on ctx;
    # not a scale, a dtype or a shape
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.x = x.t()\n"
              "        return x\n", True),
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x):\n        out = x * 2\n"
              "        ctx.a, ctx.b = 1, out\n        return out, 1\n", True),
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x, p):\n        ctx.scale = 1 / (1 - p)\n"
              "        ctx.dtype = x.dtype\n        ctx.shape = x.size()\n        return x * ctx.scale\n", False),
    ("TL504", "class F(Function):\n    def forward(ctx, x):\n        ctx.x = x\n        return x\n", False),
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, /, *xs):\n        ctx.x = xs[0]\n"
              "        return xs[0]\n", True),
    # a tensor computed from an argument the forward uses as one, directly or through a name;
    # not a size, a shape or a number read from one
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.m = torch.exp(x) > 0\n"
              "        return x\n", True),
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x):\n        y = x.clamp(0)\n"
              "        ctx.y = y\n        return x.t()\n", True),
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.n = x.size(0) * 2\n"
              "        ctx.s = x.shape[1:]\n        ctx.c = x.is_contiguous()\n        return x.t()\n", False),
    ("TL504", "class F(Function):\n    @staticmethod\n    def forward(ctx, x, p):\n        ctx.q = p * 2\n"
              "        return x.t()\n", False),  # p: never used as a tensor
    # a forward that adds to its module's state: a criterion's, or a loss named where it is kept
    # or handed on; a module that logs its outputs keeps them on purpose
    ("TL301", "class Net(nn.Module):\n    def forward(self, x):\n        y = self.fc(x)\n"
              "        self.outputs.append(y)\n        return y\n", False),
    ("TL301", "class FocalLoss(nn.Module):\n    def forward(self, x):\n        y = x.sum()\n"
              "        self.history.append(y)\n        return y\n", True),
    ("TL301", "class Head(_Loss):\n    def forward(self, x):\n        self.total = self.total + x\n", True),
    ("TL301", "class Net(nn.Module):\n    def forward(self, x):\n        self.losses['a'] += x\n", True),
    ("TL301", "class Net(nn.Module):\n    def forward(self, x):\n        loss_a = x.sum()\n"
              "        self.meter.update(loss_a)\nclass Meter:\n    def update(self, v):\n        self.sum += v\n", True),
    ("TL301", "class Net(nn.Module):\n    def forward(self, x):\n        self.meter.update(x)\n"
              "class Meter:\n    def update(self, v):\n        self.sum += v\n", False),
    ("TL301", "class Net(nn.Module):\n    def forward(self, x):\n        self.loss_meter.update(x)\n"
              "class Meter:\n    def update(self, v):\n        self.sum += v\n", True),  # kept where named a loss
    ("TL301", "class DiceLoss(nn.Module):\n    def forward(self, x):\n        self.meter.update(x)\n"
              "class Meter:\n    def update(self, v):\n        self.sum += v\n", True),  # a criterion's helper
    ("TL301", "class Net(nn.Module):\n    def forward(self, x):\n        self.seen.add(x)\n"
              "        loss = x\n", False),  # no store that adds
    # torch.load given weights_only=False in a default argument
    ("TL507", "import torch\ndef f(m=torch.load(p, weights_only=False)):\n    pass\n", True),
    ("TL507", "import torch\ndef f(m=torch.load(p, weights_only=True)):\n    pass\n", False),
    ("TL304", METER + "for x, y in loader:\n    meter.update(x)\n", True),
    ("TL304", METER + "for i in range(3):\n    meter.update(i)\n", False),
    # an acting forward bound to a name read as numbers later; a torch function's draw is none
    ("TL101", "for t in range(9):\n    prob = model.pi(s)\n    m = Categorical(prob)\n"
              "    a = m.sample().item()\n", True),
    ("TL101", "for t in range(9):\n    w = torch.rand(3)\n    a = w.argmax().item()\n", False),
    # a serving method handing back numbers with no number-read method in the file
    ("TL101", "class S:\n    def __init__(self, m):\n        self.m = m\n        self.m.eval()\n"
              "    def predict(self, x):\n        return float(self.m(x).sum())\n", True),
    # torch.compile as a statement of its own: through an alias, an assignment, across lines,
    # in a decorator's argument; re.compile and a kept result are not
    ("TL508", "from torch import compile as tc\ndef f(m):\n    tc(m)\n", True),
    ("TL508", "import torch\nc = torch.compile\nclass T:\n    def f(self):\n        c(self.m)\n", True),
    ("TL508", "import torch\ntorch.\\\n    compile(\n        model)\n", True),
    ("TL508", "import re, torch\nre.compile('x')\nm = torch.compile(model)\n", False),
    ("TL509", "import torch\n@wrap(lambda m: torch.compile(m))\ndef f(m):\n    pass\n", True),
])
def test_each_rule_asks_its_own_question(code, source, expected):
    """``needs_tree`` as the engine asks it, after the text gate (a declared rule's
    question includes its text's)."""
    assert RULES_BY_CODE[code].needs_tree(facts(source)) is expected


MAKEMORE_HEAD = ("import torch\n"
                 "g = torch.Generator()\n")


@pytest.mark.parametrize("source, expected", [
    # makemore: tensors made to require grad, sampled from in a range loop that reads numbers
    (MAKEMORE_HEAD + "C = torch.randn((27, 2), requires_grad=True)\n"
     "for _ in range(20):\n    emb = C[ix]\n    ix = torch.multinomial(emb, 1).item()\n", True),
    (MAKEMORE_HEAD + "C = torch.randn((27, 2))\nW = torch.randn((2, 27))\nparameters = [C, W]\n"
     "for p in parameters:\n    p.requires_grad = True\n"
     "while True:\n    logits = C[ix] @ W\n    ix = torch.multinomial(logits, 1).item()\n", True),
    ("from torch.nn import Parameter as P\nimport torch\nW = P(torch.randn(3, 3))\n"
     "for _ in range(5):\n    x = torch.tanh(W)\n    print(x.sum().item())\n", True),
    (MAKEMORE_HEAD + "W = torch.randn(3, 3)\nW.requires_grad: bool = True\n"
     "for _ in range(5):\n    print((x @ W).argmax().item())\n", True),
    (MAKEMORE_HEAD + "W = torch.randn(3, 3)\nW.requires_grad_()\n"
     "for _ in range(5):\n    h = x @ W\n    print(h.argmax().item())\n", True),
    # a model library: its parameters are attributes no sampling loop computes with
    ("import torch\nfrom torch import nn\n\nclass Layer(nn.Module):\n"
     "    def __init__(self):\n        super().__init__()\n        self.weight = nn.Parameter(torch.ones(3))\n\n"
     "def generate(model, ids):\n    for _ in range(8):\n        ids = model(ids).argmax(-1)\n"
     "    return ids.tolist()\n", False),
    # frozen, not trained: requires_grad = False names nothing, so the lists it loops over do not count
    (MAKEMORE_HEAD + "C = torch.randn((27, 2))\nfor p in [C]:\n    p.requires_grad = False\n"
     "for _ in range(20):\n    ix = torch.multinomial(C[ix], 1).item()\n", False),
])
def test_sampling_with_raw_parameters_needs_a_loop_that_computes_with_them(source, expected):
    from torchlint.needs.evaluation import _samples_with_raw_parameters

    assert _samples_with_raw_parameters(facts(source)) is expected


@pytest.mark.parametrize("source, expected", [
    # greedy decoding with a part of a model put in eval mode elsewhere in the file
    ("def setup(decoder):\n    decoder.eval()\n\ndef decode(decoder, h):\n    for _ in range(9):\n"
     "        h = decoder.fc(h)\n", True),
    ("def setup(decoder):\n    decoder.eval()\n\ndef decode(decoder, h):\n    while True:\n"
     "        h = decoder.module.fc(h)\n", True),  # DataParallel's .module: the rule strips it
    # a model library: frozen in __init__, generating with its own layers, which the rule never calls a part
    ("class VQ:\n    def __init__(self):\n        self.eval()\n\n    def generate(self, h):\n"
     "        for _ in range(9):\n            h = self.layer(h)\n        return h\n", False),
    ("class VQ:\n    def __init__(self):\n        self.eval()\n\n    def generate(self, h):\n"
     "        for _ in range(9):\n            h = self.module.layer(h)\n        return h\n", False),
])
def test_stepping_a_part_of_a_switched_model(source, expected):
    from torchlint.needs.evaluation import _switches_and_runs

    assert _switches_and_runs(facts(source)) is expected


IMPORT_SPELLINGS = """\
import os.path as osp, numpy
from torch import nn
from . import sibling
from .pkg.mod import thing
from jax.numpy import *
try:
    import tensorflow.compat.v1 as tf
except ImportError:
    pass

class Suite:
    import pytest

    def case(self):
        from unittest import mock
        match self:
            case _:
                import paddle
"""


def test_imported_roots_are_what_the_model_collects():
    import libcst as cst
    from torchlint.model import FileModel

    tree_roots = facts(IMPORT_SPELLINGS).imported_roots()
    assert tree_roots == {"os", "numpy", "torch", "jax", "tensorflow", "pytest", "unittest", "paddle"}
    assert tree_roots == FileModel(cst.parse_module(IMPORT_SPELLINGS), "a.py").names.imported_roots


CTX_STORE = """
class Keep(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x
"""


@pytest.mark.parametrize("path, head, skipped", [
    ("test_loop.py", "import pytest\n", True),
    ("evaluate.py", "def helper():\n    from unittest import mock\n", True),  # at any depth
    ("conftest.py", "", True),
    ("tf_train.py", "import tensorflow as tf\n", True),
    ("both.py", "import tensorflow as tf\nimport torch\n", False),  # torch code too
    ("test_net.py", "", False),  # an evaluation program named like a test: read on
    ("train.py", "import pytestify\n", False),
])
def test_unit_tests_and_other_frameworks_skip_the_rules_that_leave_them(path, head, skipped):
    source = head + STORED_LOSS.format(suffix="").replace("import torch\n", "") + CTX_STORE
    tl301, tl504 = RULES_BY_CODE["TL301"], RULES_BY_CODE["TL504"]  # TL504 reads tests too (custom Functions)
    assert tl301.torch_programs_only and not tl504.torch_programs_only
    kept = _tree_gated([tl301, tl504], ast.parse(source), source, path)
    assert (tl301 not in kept) is skipped and tl504 in kept


@pytest.mark.parametrize("rule", [r for r in ALL_RULES if r.torch_programs_only], ids=lambda r: r.code)
def test_rules_said_to_leave_unit_tests_find_nothing_in_one(rule, monkeypatch):
    """``torch_programs_only`` holds on the model's reading too: the rule's own invalid
    examples, made a pytest file or another framework's, give it nothing even with every
    gate off (the engine leaves the rule out once ``FileModel`` sees what the file is)."""
    without_gates(monkeypatch)

    def found(text: str) -> list:
        return [d for d in lint_source(text, "case.py", [rule], target_torch=(2, 0)).diagnostics
                if d.code == rule.code]

    reported = [example for example in rule.invalid if found(example)]
    assert reported
    for example in reported:
        for head in ("import pytest\n", "import jax\n"):
            plain = re.sub(r"(?m)^\s*(?:import|from) torch\b.*$", "pass", example)  # jax code, no torch
            text = head + (example if head == "import pytest\n" else plain)
            assert not found(text)


def test_the_index_lists_statements_in_the_order_they_are_written():
    index = facts("""
        import a
        for i in x:
            import b
        try:
            while y:
                pass
        except E:
            def f():
                for j in z:
                    import c
        else:
            import d
        finally:
            import e
        class K:
            def g(self):
                import f
        match v:
            case 1:
                for k in w:
                    pass
        """)
    assert [stmt.names[0].name for stmt in index.imports] == ["a", "b", "d", "e", "c", "f"]
    assert [(owner, loop.lineno) for owner, loop in index.loops] == [("", 3), ("", 6), ("f", 10), ("", 21)]
    assert index.body_owners == ["", "f", "g"]
    assert [loop.lineno for loop in index.outermost_loops] == [3, 6, 10, 21]  # f's loop is its own scope's
    assert [type(stmt).__name__ for stmt in index.import_time] == ["Import", "For", "Import", "Try", "While", "Pass",
                                                                   "Import", "Import", "Match", "For", "Pass"]


def test_statements_spelling_are_those_spanning_a_line_that_spells_a_word_headers_on_request():
    index = facts("""\
@decorate(load(a))
def f(x=load(b)):
    \"\"\"A docstring:
    load(doc) and fetch(doc) are no calls
    \"\"\"
    y = 1
    z = load(
        c)
    if fetch(d):
        pass
class C(Base, meta=load(e)):
    w = 2
""")
    assert index.lines_spelling(["load", "fetch"]) == [1, 2, 7, 9, 11]
    assert index.lines_spelling(["fetch"]) == [9]
    assert index.lines_spelling(["unspelt"]) == []

    def loaded(headers):
        return sorted(ast.unparse(n.args[0]) for n in index.statements_spelling(["load", "fetch"], headers=headers)
                      if isinstance(n, ast.Call) and ast.unparse(n.func) in ("load", "fetch"))

    assert loaded(False) == ["c", "d"]  # a statement across lines 7-8; an if's test
    assert loaded(True) == ["a", "b", "c", "d", "e"]  # decorators, defaults and class keywords too


ATTENTION_AND_HEAD = """\
import torch.nn as nn
from torch.nn import CrossEntropyLoss


class Attention(nn.Module):
    def forward(self, q, k, v):
        weights = nn.functional.softmax(q @ k.transpose(-1, -2), dim=-1)
        weights = nn.functional.dropout(weights, p=0.1)
        return weights @ v, weights


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = nn.Linear(8, 3)

    def forward(self, x, labels):
        logits = self.classifier(x)
        loss_fct = CrossEntropyLoss()
        return loss_fct(logits.view(-1, 3), labels.view(-1))
"""


NO_DROPOUT = ("        weights = nn.functional.dropout(weights, p=0.1)\n", "")
ATTENTION_AS_HEAD = ("self.classifier = nn.Linear(8, 3)", "self.classifier = Attention()")


@pytest.mark.parametrize("edits, reaches", [
    ([], False),  # attention's softmax goes through dropout; the loss takes a linear layer's logits
    ([NO_DROPOUT], False),  # attention hands back its softmax, but no call the loss reads runs an Attention
    ([ATTENTION_AS_HEAD, ("self.classifier(x)", "self.classifier(x, x, x)[1]")], False),  # through dropout
    ([NO_DROPOUT, ATTENTION_AS_HEAD, ("self.classifier(x)", "self.classifier(x, x, x)[1]")], True),
    ([NO_DROPOUT, ATTENTION_AS_HEAD, ("logits = self.classifier(x)", "_, logits = self.classifier(x, x, x)")],
     True),  # one element of the tuple it hands back
    ([NO_DROPOUT, ("self.classifier = nn.Linear(8, 3)", "self.blocks = nn.Sequential(Attention())"),
      ("self.classifier(x)", "self.blocks(x)")], True),  # a module holding an Attention
    ([NO_DROPOUT, ("class Classifier(nn.Module):", "class Classifier(Attention):"),
      ("self.classifier(x)", "self(x, x, x)[1]")], True),  # its own forward, a base's that ends in it
    ([("logits = self.classifier(x)", "logits = probabilities(self.classifier(x))"),
      ("class Classifier", "def probabilities(x):\n    return x.softmax(-1)\n\n\nclass Classifier")], True),
    ([("logits = self.classifier(x)", "logits = self.classifier(x).softmax(-1)")], True),  # the loss's own input
    ([("self.classifier = nn.Linear(8, 3)", "self.classifier = nn.Sequential(nn.Linear(8, 3), nn.Softmax(-1))")],
     True),  # a layer of it, last in a Sequential
    ([("self.classifier = nn.Linear(8, 3)", "self.classifier = nn.Linear(8, 3)\n        self.softmax = nn.Softmax(-1)"),
      ("logits = self.classifier(x)", "logits = self.classifier(x)\n        probs = self.softmax(logits)")],
     False),  # a layer of it whose output the loss does not read
])
def test_a_softmax_reaches_a_cross_entropy_only_through_returns_layers_and_loss_inputs(edits, reaches):
    source = ATTENTION_AND_HEAD
    for old, new in edits:
        assert old in source
        source = source.replace(old, new)
    assert activation_may_reach_loss(facts(source), "cross_entropy", "softmax") is reaches


@pytest.mark.parametrize("body, reaches", [
    ("probs = F.softmax(out, 1)\n    probs = probs.view(-1, 10)\n    return crit(probs, y)", True),
    ("probs = F.softmax(out, 1); loss = crit(probs, y)\n    return loss", True),  # one line, two statements
    ("probs = F.softmax(out, 1)\n    probs = torch.log(probs)\n    return crit(probs, y)", False),
    ("out = crit(out, y)\n    return out", False),  # the binding comes after the read it holds
    ("return crit(nn.Softmax(dim=1)(out), y)", True),  # a layer of the activation: anywhere
])
def test_the_last_binding_before_the_read_decides(body, reaches):
    source = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ncrit = nn.CrossEntropyLoss()\n\n\n"
              f"def step(out, y):\n    {body}\n")
    assert activation_may_reach_loss(facts(source), "cross_entropy", "softmax") is reaches


@pytest.mark.parametrize("source, expected", [
    # a model written as a function over tensors trained by hand, called in a loop
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    return x @ W\n"
     "for p in points:\n    print(net(p).sum().item())\n", True),
    # the function reads no such tensor
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    return x @ x\n"
     "for p in points:\n    print(net(p).sum().item())\n", False),
    # frozen, not trained
    ("import torch\nW = torch.randn(2, 2, requires_grad=False)\ndef net(x):\n    return x @ W\n"
     "for p in points:\n    print(net(p).sum().item())\n", False),
    # only its shape read, no computation; or the function is never called (a method of that
    # name is another function)
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    n = W.shape[0]\n    return x\n"
     "for p in points:\n    print(net(p).sum().item())\n", False),
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    return x @ W\n"
     "for p in points:\n    print(obj.net(p).sum().item())\n", False),
    # called in brackets or across a line; computing through a keyword argument or a torch call
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    return x @ W\n"
     "for p in points:\n    print((net)(p).sum().item())\n", True),
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    return x @ W\n"
     "for p in points:\n    print(fn(net\n    (p)))\n", True),
    ("import torch\nW = torch.randn(2, 2, requires_grad=True)\ndef net(x):\n    return torch.mm(x, mat2=W)\n"
     "for p in points:\n    print(net(p))\n", True),
    # trainable through a loop over a list of them; the list assigned anywhere
    ("import torch\nW = torch.randn(2, 2)\nparams = [W]\nfor p in params:\n    p.requires_grad = True\n"
     "def net(x):\n    return x @ W\nfor p in points:\n    print(net(p))\n", True),
    # made by an alias of Parameter written in a default argument
    ("from torch.nn import Parameter as P\ndef make(w=None):\n    pass\ndef g(W=P(t)):\n    pass\n"
     "W = P(t)\ndef net(x):\n    return W[x]\nfor p in points:\n    print(net(p))\n", True),
])
def test_hand_written_forwards_need_a_function_over_trained_tensors(source, expected):
    from torchlint.needs.evaluation import _calls_hand_written_forward

    assert _calls_hand_written_forward(facts(source)) is expected


def test_the_gates_walk_every_node_but_operators_and_contexts():
    """``all_nodes`` and ``own_nodes`` skip ``Load``/``Store`` and operators (a third of a tree),
    which every question reads off their owner; nothing else may go missing."""
    from torchlint.tree_gate import all_nodes, own_nodes

    source = textwrap.dedent("""
        import torch as t
        class Net(t.nn.Module):
            w = t.zeros(3) @ t.ones(3)
            def forward(self, x, *rest, k=1, **kw):
                return [-x[i] for i in range(k) if not i <= 2 and x is not None]
        with t.no_grad() as g:
            y: int = f"{Net()(1)!r:>4}" or (lambda a: a)(2)
            del y
        try:
            pass
        except ValueError as e:
            raise
    """)
    tree = ast.parse(source)
    skipped = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)
    expected = {id(n) for n in ast.walk(tree) if not isinstance(n, skipped)}
    assert {id(n) for n in all_nodes(tree)} == expected
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    inside = {id(n) for f in functions for n in ast.walk(f) if n is not f}
    assert {id(n) for n in own_nodes(tree.body)} == expected - inside - {id(tree)} - {id(f) for f in functions}
