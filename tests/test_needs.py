"""Declared needs (``torchlint.needs``): both gates of a rule come from one declaration."""
from __future__ import annotations

import ast
import re

import pytest

from conftest import CORPUS, FIXTURES
from torchlint.model.vocab import is_eval_data_name, is_eval_function_name, is_loader_name, is_optimizer_name
from torchlint.needs import (
    BACKWARD, STEP, TRAINING_STEP, TRAINS, AllOf, AnyOf, Call, CallsItsOwn, Defines, EvaluationLoop, ForwardAddsToSelf,
    ForwardWritesSelfParameter, ImportTimeCall, ImportTimeCodeWrites, ImportTimeForward, ImportTimeLeafWrite, Indexed,
    LeafHandedToAProjectWriter, LoopBinds, LoopCallsImported, LoopOver, Need,
    ParametersHandedToAWalker, RequiresGradForcedOnAResult, ResultUsedAsObject, StoresInAnIteration,
    SwitchesToTraining, TensorKeptOnContext, Text, TorchBefore,
)
from torchlint.rule import Rule
from torchlint.rules import ALL_RULES, RULES_BY_CODE
from torchlint.tree_gate import TreeIndex

CRITERION = "class Criterion:\n    def forward(self, out, y):\n        loss = (out - y).pow(2).mean()\n"
# walks its parameters twice: the second walk of a generator sees nothing
CLIP_BY_HAND = ("def clip(params, most):\n    total = sum(p.grad.norm() for p in params)\n"
                "    for p in params:\n        p.grad.mul_(most / total)\n\n")
STATIC_FORWARD = "class F(Function):\n    @staticmethod\n    def forward("
DECLARED = [rule for rule in ALL_RULES if rule.needs is not None]
SOURCES = sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))


def index(source: str) -> TreeIndex:
    return TreeIndex(ast.parse(source), source)


def text_admits(need: Need, source: str) -> bool:
    code = index(source).code_text()
    return all(re.search(pattern, code) for pattern in need.text())


@pytest.mark.parametrize("need, source, found", [
    (BACKWARD, "loss.backward()\n", True),
    (BACKWARD, "loss . backward (\n)\n", True),
    (BACKWARD, "from torch.autograd import backward\nbackward(loss)\n", True),
    (BACKWARD, "self.manual_backward(loss)\n", True),
    (BACKWARD, "ctx.save_for_backward(x)\n", False),
    (BACKWARD, "class F:\n    def backward(ctx, g):\n        return g\n", False),
    (BACKWARD, "def f():\n    '''\n    >>> loss.backward()\n    '''\n", False),  # an example in a docstring
    (BACKWARD, "print('loss.backward()')  # loss.backward()\n", False),
    (STEP, "opt.step()\n", True),
    (STEP, "step()\n", False),  # a method only
    (STEP, "@torch.no_grad()\ndef step(self):\n    pass\n", False),
    (Call("zero_grad"), "zero_grad(model)\n", True),
    (Call("zero_grad"), "model.zero_grad\n", False),  # named, never called
    (Call("numpy", method=True), "@wrap(lambda t: t.numpy())\ndef f():\n    pass\n", True),  # decorators count
    (TRAINING_STEP, "class M:\n    async def training_step(self, batch):\n        pass\n", True),
    (TRAINING_STEP, "def validation_step(self, batch):\n    pass\n", False),
    (TRAINS, "opt.step()\n", True),
    (TRAINS, "torch.autograd.grad(y, x)\n", True),
    (TRAINS, "model(x)\n", False),
    (LoopOver(is_loader_name), "for x, y in train_dl:\n    pass\n", True),
    (LoopOver(is_loader_name), "for i in range(num_batches):\n    pass\n", False),
    (LoopBinds(lambda name: name == "h"), "while True:\n    out, h = rnn(x, h)\n", True),
    (LoopBinds(lambda name: name == "h"), "h = init()\nfor x in xs:\n    out = rnn(x, h)\n", False),
    (ImportTimeCall("numpy"), "t.numpy()\n", True),
    (ImportTimeCall("numpy"), "def f(t):\n    return t.numpy()\n", False),
    (ImportTimeCall("numpy"), "def f(t):\n    return t.numpy()\n\nf(x)\n", True),  # a function of the file
    (LoopCallsImported(), "from .engine import train_step\nfor b in data:\n    train_step(b)\n", True),
    (LoopCallsImported(), "from .engine import train_step\ntrain_step(b)\n", False),  # not in a loop
    (LoopCallsImported(), "from torch import cat\nfor b in data:\n    cat(b)\n", False),  # a library's
    (LoopCallsImported(is_optimizer_name, "opt"), "import engine\nfor b in data:\n    engine.step(model, opt)\n", True),
    (LoopCallsImported(is_optimizer_name, "opt"), "import engine\nfor b in data:\n    engine.step(model, b)\n", False),
    (Indexed("data", 0, frozenset({"cpu"})), "print(loss.data.cpu()[0])\n", True),
    (Indexed("data", 0, frozenset({"cpu"})), "print(loss.data.numpy()[0])\n", False),  # not looked through
    (Indexed("data", 0), "print(batch.data[1])\n", False),
    (Call("load", passes=("weights_only", False)), "torch.load(f, weights_only=False)\n", True),
    (Call("load", passes=("weights_only", False)), "torch.load(f, weights_only=0)\n", True),
    (Call("load", passes=("weights_only", False)), "torch.load(f, weights_only=True)\n", False),
    (Call("load", passes=("weights_only", False)), "torch.load(f, weights_only=0.0)\n", False),  # not a literal bool
    (Call("load", passes=("weights_only", False)), "torch.save(x, f, weights_only=False)\n", False),
    (Call("load", omits="weights_only"), "torch.load(f)\n", True),
    (Call("load", omits="weights_only"), "torch.load(f, weights_only=flag)\n", False),
    (Call("load", omits="weights_only"), "torch.load(f, **options)\n", False),  # it may be in there
    (Call("load", aliases=True), "from torch import *\nstate = load(f)\n", True),  # not a builtin name
    (TorchBefore((2, 6)) & Text("load"), "load()\n", False),  # the index's target: the newest torch
    (ResultUsedAsObject(Call("load")), "net = torch.load(f)\nnet(x)\n", True),
    (ResultUsedAsObject(Call("load")), "ckpt = torch.load(f)\nnet = ckpt['net']\nnet = net.to(d)\nnet(x)\n", True),
    (ResultUsedAsObject(Call("load")), "torch.load(f).eval()\n", True),
    (ResultUsedAsObject(Call("load")), "ckpt = torch.load(f)\nmodel.load(ckpt['model'])\n", False),
    (RequiresGradForcedOnAResult(), "loss = criterion(out, y)\nloss.requires_grad = True\n", True),
    (RequiresGradForcedOnAResult(), "out = model(x).mean()\nout.requires_grad_()\n", True),
    (RequiresGradForcedOnAResult(), "loss = 0\nloss.requires_grad_(True)\n", True),  # named like a loss
    (RequiresGradForcedOnAResult(), "w = torch.zeros(3)\nw.requires_grad = True\n", False),  # a factory's
    (RequiresGradForcedOnAResult(), "out = model(x)\nout.requires_grad_(False)\n", False),
    (RequiresGradForcedOnAResult(), "out.requires_grad = True\nout = model(x)\n", False),  # bound after
    (TensorKeptOnContext(), STATIC_FORWARD + "ctx, x):\n        ctx.x = x.t()\n        return x\n", True),
    (TensorKeptOnContext(), STATIC_FORWARD + "c, x):\n        y = x.exp()\n        c.y = y\n        return x\n", True),
    (TensorKeptOnContext(), STATIC_FORWARD + "ctx, x, p):\n        ctx.p = 1 / (1 - p)\n        return x\n", False),
    (TensorKeptOnContext(), "class F(Function):\n    def forward(ctx, x):\n        ctx.x = x\n", False),  # not static
    (ParametersHandedToAWalker(), CLIP_BY_HAND + "params = model.parameters()\nclip(params, 1.0)\n", True),
    (ParametersHandedToAWalker(), CLIP_BY_HAND + "clip(model.parameters(), 1.0)\n", True),
    (ParametersHandedToAWalker(), CLIP_BY_HAND + "clip(weights, 1.0)\n", False),  # no parameters() handed
    (ParametersHandedToAWalker(), "from .utils import clip\nclip(model.parameters(), 1.0)\n", True),  # the project's
    (ParametersHandedToAWalker(), "from torch import cat\ncat(list(model.parameters()))\n", False),  # a library's
    (EvaluationLoop(), "for x, y in val_loader:\n    out = model(x)\n", True),
    (EvaluationLoop(), "for x, y in train_loader:\n    out = model(x)\n", False),
    (CallsItsOwn(is_eval_function_name), "def evaluate(m):\n    pass\n\nevaluate(net)\n", True),
    (CallsItsOwn(is_eval_function_name), "def evaluate(m):\n    pass\n", False),  # for callers elsewhere
    (ImportTimeForward(is_eval_data_name), "pred = model(X_test)\n", True),
    (ImportTimeForward(is_eval_data_name), "def f():\n    return model(X_test)\n", False),
    (SwitchesToTraining(), "model.train()\n", True),
    (SwitchesToTraining(), "model . train (mode=1)\n", True),
    (SwitchesToTraining(), "model.train(False)\n", False),
    (SwitchesToTraining(), "self.head.train(self.training)\n", False),  # a mode passed on
    (StoresInAnIteration(), "for x, y in loader:\n    losses.append(criterion(model(x), y))\n", True),
    (StoresInAnIteration(), "for i in range(9):\n    total += f(i)\nloss.backward()\n", True),  # the file trains
    (StoresInAnIteration(), "for i in range(9):\n    total += f(i)\n", False),  # no iteration of anything
    (StoresInAnIteration(), "def evaluate(m):\n    for b in data:\n        scores[b] = m(b)\n", True),
    (StoresInAnIteration(), "def forward(self, xs):\n    for x in loader:\n        self.h.append(x)\n", False),
    (ForwardAddsToSelf(), CRITERION + "        self.total += loss\n        return loss\n", True),
    (ForwardAddsToSelf(), CRITERION + "        self.meter.update(loss)\n        return loss\n", False),  # no keeper
    (ForwardAddsToSelf(), CRITERION.replace("forward", "reset") + "        self.total += loss\n", False),
    (ImportTimeLeafWrite(), "w = torch.zeros(3, requires_grad=True)\nw.add_(1)\n", True),
    (ImportTimeLeafWrite(), "def f(w):\n    w.add_(1)\nw = nn.Parameter(x)\n", False),  # not at import
    (ImportTimeCodeWrites(), "def _init(w=None):\n    w += 1\nweights = _init()\n", True),
    (ImportTimeCodeWrites(), "def _cfg(**kw):\n    out = []\n    out += [kw]\ncfgs = _cfg(url='')\n", False),
    (ForwardWritesSelfParameter(), "class Net:\n    def forward(self, x):\n        self.fc.weight[0] = 0\n", True),
    (ForwardWritesSelfParameter(), "class Net:\n    def forward(self, x, r):\n        x += r\n", False),
    (LeafHandedToAProjectWriter(), "from torch import nn\nnn.init.zeros_(w)\n", False),  # a library's
    (Text("no_grad") & BACKWARD, "with torch.no_grad():\n    loss.backward()\n", True),
    (Text("no_grad") & BACKWARD, "loss.backward()\n", False),
    (Text("no_grad") | BACKWARD, "loss.backward()\n", True),
])
def test_each_shape_is_found_where_it_is_and_its_text_admits_it(need, source, found):
    assert need.found_in(index(source)) is found
    if found:  # the text gate, computed from the same declaration, lets it through
        assert text_admits(need, source)


def test_combinations_flatten_and_spell_their_text():
    both = Text("a") & Text("b") & Text("c")
    assert isinstance(both, AllOf) and both.text() == ("a", "b", "c")
    either = Text("a") | Text("b") | (Text("c") & Text("d"))
    assert isinstance(either, AnyOf) and either.text() == ("a|b|c", "a|b|d")  # one regex of each alternative
    # A pick another one implies is left out: "r|i|i" is "r|i", which "r|i|o" needs no more.
    assert (Text("r") | (Text("t") & Text("i")) | (Text("i") & Text("o"))).text() == ("r|t|o", "r|i")
    # An alternative the text cannot tell leaves the text no condition to set.
    assert (Text("a") | LoopOver(is_loader_name)).text() == ()
    assert (Text("a") | LoopOver(is_loader_name, "loader")).text() == ("a|loader",)
    assert Defines("f", "g").text() == (r"def\s+(?:f|g)\b",)


@pytest.mark.parametrize("rule", DECLARED, ids=lambda rule: rule.code)
def test_a_declared_rules_gates_are_its_declaration(rule):
    assert rule.gate == rule.needs.text() and rule.gate
    assert "needs_tree" not in rule.__dict__


@pytest.mark.parametrize("rule", DECLARED, ids=lambda rule: rule.code)
def test_what_a_declaration_finds_in_the_tree_its_text_admits(rule):
    """The text gate is implied by the tree question on every fixture and corpus file:
    derived from one declaration, the two never disagree the unsound way."""
    checked = 0
    for path in SOURCES:
        source = path.read_text(encoding="utf-8")
        tree_index = index(source)
        if rule.needs.found_in(tree_index):
            assert all(re.search(pattern, tree_index.code_text()) for pattern in rule.gate), path
            checked += 1
    assert checked, "no file holds what the rule needs: the check above checked nothing"


def test_a_rule_declares_its_needs_and_writes_no_gate():
    with pytest.raises(TypeError, match="writes a gate"):
        class Both(Rule):  # noqa: F841 - defining it is the test
            code = "TL999"
            needs = BACKWARD
            gate = ("backward",)
    with pytest.raises(TypeError, match="writes a gate"):
        class Written(Rule):  # noqa: F841
            code = "TL999"

            @classmethod
            def needs_tree(cls, tree_index):
                return True

    class Declared(Rule):
        code = "TL999"
        needs = BACKWARD

    assert Declared.gate == BACKWARD.text() and Declared.needs_tree(index("loss.backward()\n"))


@pytest.mark.parametrize("source, found", [
    ("import torch\nmodel = torch.compile(model)\n", True),
    ("from torch import compile as tc\nmodel = tc(model)\n", True),
    ("import torch\nc = torch.compile\nnet = c(net)\n", True),
    ("import re\npattern = re.compile('x')\n", False),
    ("import torch\ncode = compile(source, 'f', 'exec')\n", False),  # Python's builtin
])
def test_an_aliased_call_is_found_under_the_names_the_file_gives_it(source, found):
    need = Call("compile", aliases=True, not_on=("re",))
    assert need.found_in(index(source)) is found
    assert text_admits(need, source)


@pytest.mark.parametrize("source, found", [
    ("import torch\ntorch.compile(model)\n", True),
    ("import torch\nmodel = torch.compile(model)\n", False),
    ("import torch\nrun(torch.compile(model))\n", False),
])
def test_a_discarded_call_is_a_statement_of_its_own(source, found):
    assert Call("compile", discarded=True).found_in(index(source)) is found


def test_a_name_bound_to_what_a_call_returns_is_no_alias():
    """``model = torch.compile(model)`` binds the compiled model, not the function: ``model(x)``
    is no call of ``compile``; ``c = torch.compile if fast else f`` binds the function."""
    source = "import torch\nmodel = torch.compile(model)\nmodel(x)\n"
    assert not Call("compile", aliases=True, discarded=True).found_in(index(source))
    source = "import torch\nc = torch.compile if fast else f\nc(model)\n"
    assert Call("compile", aliases=True, discarded=True).found_in(index(source))


def test_a_target_torch_version_is_asked_of_the_index():
    source = "import torch\nstate = torch.load(f)\n"
    assert TorchBefore((2, 6)).found_in(TreeIndex(ast.parse(source), source, target_torch=(2, 4)))
    assert not TorchBefore((2, 6)).found_in(TreeIndex(ast.parse(source), source, target_torch=(2, 6)))


def test_no_rule_reads_pythons_tree():
    """Rules read the libcst model; what Python's ``ast`` is asked lives in the shapes."""
    from conftest import ROOT

    for path in sorted((ROOT / "src" / "torchlint" / "rules").glob("tl*.py")):
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):  # ``from torchlint import tree_gate`` too
                imported.update({node.module, *(f"{node.module}.{alias.name}" for alias in node.names)})
        assert not imported & {"ast", "torchlint.tree_gate"}, path.name


def test_every_rule_declares_what_it_needs():
    """No rule writes a gate of its own: each text gate and tree question is computed from a
    declaration (a new question is a new shape in ``needs/``)."""
    assert [rule.code for rule in ALL_RULES if rule.needs is None] == []
    assert not [rule.code for rule in ALL_RULES if "needs_tree" in vars(rule)]
    assert RULES_BY_CODE["TL107"].needs is RULES_BY_CODE["TL101"].needs  # its opt-in twin


def _bench_gates():
    import importlib.util

    from conftest import ROOT
    spec = importlib.util.spec_from_file_location("_torchlint_bench_gates", ROOT / "bench" / "gates.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gate_benchmark_counts_what_each_gate_admits(tmp_path):
    """bench/gates.py: a training step passes both of TL201's gates; its words in a docstring
    pass the text gate on the raw source only, and no file of the two reaches libcst for it."""
    (tmp_path / "train.py").write_text("for x in loader:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n")
    (tmp_path / "doc.py").write_text('"""\n>>> loss.backward()\n>>> opt.step()\n"""\n')
    gates = _bench_gates()
    counts = gates.count(tmp_path)
    assert counts["files"] == 2 and counts["reach_libcst"] == 1
    assert counts["text"]["TL201"] == 2 and counts["tree"]["TL201"] == 1
    table = gates.table(counts, {**counts, "text": {**counts["text"], "TL201": 1}})
    assert "| TL201 | 2 | 1 | 1 / 1 * |" in table


def test_the_gate_benchmark_weighs_each_question_against_its_check(tmp_path):
    """bench/gates.py --costs: on a file some rule admits, a rule whose question says no has its
    check timed there, and a file no rule admits (or a broken notebook) adds no row."""
    (tmp_path / "train.py").write_text("for x in loader:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
                                       "    losses.append(loss)\n"
                                       "model.eval()\nfor x in val_loader:\n    print(model(x).argmax(1))\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    (tmp_path / "broken.ipynb").write_text("{not json")
    rows = {line.split("|")[1].strip(): line for line in _bench_gates().costs(tmp_path).splitlines()[2:]}
    assert "TL201" in rows and "TL101" in rows  # a training loop, then evaluation without no_grad
    asked = {rule.code for rule in ALL_RULES if rule.asked_when_parsed}
    assert {code for code, line in rows.items() if line.rstrip().endswith("| yes |")} == asked & set(rows)
    assert "TL201" not in asked and "TL301" in asked & set(rows)  # the last column tells both kinds apart
    declined = {code: int(line.split("(")[1].split(")")[0]) for code, line in rows.items()}
    assert declined["TL201"] == 0 and declined["TL101"] == 0  # their questions admit it
    assert declined["TL303"] == 1  # a loss kept in no meter: its question says no, its check is timed
