"""The shared per-file model: names, grad mode, loops and taint, asked directly."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.model import FileModel, GradMode


def build(source: str) -> FileModel:
    return FileModel(cst.parse_module(textwrap.dedent(source)), "m.py")


def grad_of(model: FileModel, method: str) -> GradMode:
    """Grad mode at the first call of ``x.<method>()``."""
    [call] = [c for c in model.calls if c.method == method][:1]
    return model.grad_at(call.site)


@pytest.mark.parametrize("source, expected", [
    ("import torch as T\n", {"T": "torch"}),
    ("import torch.nn as nn\n", {"nn": "torch.nn"}),
    ("from torch import nn, optim\n", {"nn": "torch.nn", "optim": "torch.optim"}),
    ("from torch.utils.checkpoint import checkpoint as ckpt\n", {"ckpt": "torch.utils.checkpoint.checkpoint"}),
    ("import numpy as np\n", {}),
])
def test_torch_aliases(source, expected):
    assert build(source).names.aliases == expected


@pytest.mark.parametrize("source, suspends", [
    ("for x in xs:\n    f(x)\n", False),
    ("def g():\n    for x in xs:\n        yield f(x)\n", True),
    ("async def g():\n    await f()\n", True),
    ("async def g():\n    async for x in xs:\n        f(x)\n", True),
    ("async def g():\n    async with lock:\n        f()\n", True),
    ("async def g():\n    return [x async for x in xs]\n", True),
    ("def g():\n    if False:\n        yield\n    f()\n", True),  # dead, and still a generator
    ("def g():\n    while False:\n        await f()\n", True),
])
def test_a_file_that_suspends_nowhere_is_known_as_one(source, suspends):
    """``edits.suspends`` is not asked of a file where this is False: it must never miss one."""
    assert build(source).suspends_somewhere is suspends


@pytest.mark.parametrize("source, spelled", [
    ("import torch as T\n", "T"),
    ("import torch as T\nimport torch\n", "torch"),  # torch itself wins wherever it is bound
    ("import torch\nimport torch as T\n", "torch"),
    ("import numpy as np\n", "torch"),  # none: the fixer adds ``import torch``
])
def test_fixes_spell_torch_as_the_file_binds_it(source, spelled):
    assert build(source).names.torch_alias == spelled


@pytest.mark.parametrize("source", [
    "import torch\nwith torch.no_grad():\n    m.probe()\n",
    "import torch as T\nwith T.inference_mode():\n    m.probe()\n",
    "from torch import no_grad\nwith no_grad():\n    m.probe()\n",
    "import torch\n@torch.no_grad()\ndef f():\n    m.probe()\n",
    "import torch\n@torch.no_grad\ndef f():\n    m.probe()\n",
    "import torch\nwith torch.set_grad_enabled(False):\n    m.probe()\n",
    "import torch\ntorch.set_grad_enabled(False)\nm.probe()\n",
    "import torch\ndef helper():\n    m.probe()\nwith torch.no_grad():\n    helper()\n",
    "class M:\n    def validation_step(self, batch):\n        m.probe()\n",
])
def test_no_grad_forms(source):
    assert grad_of(build(source), "probe") is GradMode.NO_GRAD


@pytest.mark.parametrize("source, expected", [
    ("import torch\nwith torch.set_grad_enabled(phase == 'train'):\n    m.probe()\n", GradMode.MAYBE),
    ("import torch\n@torch.no_grad()\ndef f():\n    with torch.enable_grad():\n        m.probe()\n", GradMode.GRAD),
    ("import torch\nwith torch.inference_mode(False):\n    m.probe()\n", GradMode.GRAD),
    ("def helper():\n    m.probe()\nhelper()\n", GradMode.GRAD),
    ("import torch\ndef helper():\n    m.probe()\nhelper()\nwith torch.no_grad():\n    helper()\n", GradMode.GRAD),
])
def test_grad_on_or_unknown(source, expected):
    assert grad_of(build(source), "probe") is expected


def test_loops_know_their_helpers():
    model = build("""
        def step(model, opt, x):
            loss = model(x).sum()
            loss.backward()
            opt.step()

        def train(model, opt, loader):
            for x in loader:
                opt.zero_grad()
                step(model, opt, x)
    """)
    [loop] = list(model.loops())
    calls = model.reachable_calls(loop)
    assert any(model.is_backward(c) for c in calls)
    assert [model.stepped_optimizer(c) for c in calls if model.stepped_optimizer(c)] == ["opt"]


@pytest.mark.parametrize("expr, carries", [
    ("loss", True), ("loss.item()", False), ("loss.detach()", False), ("float(loss)", False),
    ("loss * 2 + 1", True), ("(out.argmax(1) == y).sum()", False), ("out.cpu()", True),
    ("loss.data", False), ("{'loss': loss}", True), ("torch.stack([loss, loss])", True),
    ("torch.argmax(out)", False), ("unknown(loss)", False), ("x.size(0)", False),
])
def test_taint(expr, carries):
    model = build(f"""
        import torch
        def train(model, criterion, x, y):
            out = model(x)
            loss = criterion(out, y)
            probe = {expr}
    """)
    scope = model.scopes[-1]
    [assign] = [a for a in scope.assignments if a.targets[0].value == "probe"]
    assert model.taint(scope).carries_graph(assign.value, assign.order) is carries


def test_no_grad_outputs_carry_no_graph():
    model = build("""
        import torch
        def evaluate(model, x):
            with torch.no_grad():
                out = model(x)
            probe = out
    """)
    scope = model.scopes[-1]
    assign = scope.assignments[-1]
    assert not model.taint(scope).carries_graph(assign.value, assign.order)


def test_same_module_function_returning_a_loss_taints_its_caller():
    model = build("""
        def step(model, criterion, x, y):
            return criterion(model(x), y)

        def train(model, criterion, loader):
            for x, y in loader:
                probe = step(model, criterion, x, y)
    """)
    scope = model.scopes[-1]
    assign = scope.assignments[-1]
    assert model.taint(scope).carries_graph(assign.value, assign.order)


def test_functions_of_imported_modules_are_not_forward_passes():
    model = build("""
        from torchvision import models
        from . import nets
        import timm.models as tm
        def run(model, x):
            a = models.resnet18(weights=None)
            b = nets.build_backbone(pretrained=True)
            c = tm.vit_base(pretrained=False)
            return model(x), self_net(x)
    """)
    forwards = {c.callee for c in model.calls if model.is_forward(c)}
    assert forwards == {"model", "self_net"}


@pytest.mark.parametrize("path, source, unit_test", [
    ("test_net.py", "import argparse\nparser = argparse.ArgumentParser()\n", False),  # a name is not enough
    ("test_model.py", "def test(model, loader):\n    assert model\ntest(m, l)\n", False),  # runs its own test()
    ("test_shapes.py", "def test_shape():\n    assert f(1) == 1\n", True),  # collected by pytest
    ("checks.py", "class TestNet:\n    def test_forward(self):\n        self.assertEqual(1, 1)\n", True),
    ("test_ops.py", "def test_nothing():\n    print(1)\n", False),  # asserts nothing
    ("test_metrics.py", "def test_a():\n    assert 1\ndef test_b():\n    assert 2\ndef main():\n    test_a()\n"
                        "    test_b()\n", True),  # a suite run from its own main()
    ("conftest.py", "import torch\n", True),
    ("eval.py", "import unittest\n", True),
    ("eval.py", "from torch.testing._internal.common_utils import TestCase\n", True),
])
def test_unit_tests_are_told_by_content(path, source, unit_test):
    assert FileModel(cst.parse_module(source), path).is_test_file is unit_test


@pytest.mark.parametrize("statement, numbers", [
    ("a = q(s).argmax().item()", True),
    ("a = int(torch.argmax(q(s)))", True),
    ("hits += (q(s).argmax(1) == y).sum().item()", True),
    ("xs = q(s).detach().cpu().numpy()", True),
    ("a = int(q(s))", False),  # no index read before the int(): the text gate could not tell
    ("a = q(s).argmax(1, keepdim=True)", False),  # still a tensor: Double DQN picks targets with it
    ("d = Categorical(logits=q(s)); a = d.sample().item()", False),  # the distribution is kept
    ("a = pick(q(s)).item()", False),  # a helper of the file may keep what it is handed
    ("q(s).sum().backward()", False),
])
def test_forwards_read_as_numbers_in_their_own_statement(statement, numbers):
    from torchlint.model.evaluation import read_as_numbers

    model = build(f"import torch\nfrom torch.distributions import Categorical\n{statement}\n")
    [call] = [c for c in model.calls if c.callee == "q"]
    assert read_as_numbers(model, call) is numbers


def _dead_lines(source: str) -> set:
    """Lines of ``source`` whose calls sit in a branch the model calls dead."""
    module = cst.parse_module(textwrap.dedent(source))
    model = FileModel(module)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    recorded = {id(c.node) for c in model.calls}
    dead = set()
    for node, pos in positions.items():
        if isinstance(node, cst.Call):
            # the model records a call exactly when it is live
            assert (id(node) in recorded) != model.is_dead(node)
            if model.is_dead(node):
                dead.add(pos.start.line)
    return dead


@pytest.mark.parametrize("source, dead", [
    ("if False:\n    a()\nb()\n", {2}),
    ("if 0:\n    a()\nelse:\n    b()\n", {2}),
    ("if None:\n    a()\n", {2}),
    ("if not True:\n    a()\nelse:\n    b()\n", {2}),
    ("if True:\n    a()\nelif c():\n    b()\nelse:\n    d()\n", {3, 4, 6}),
    ("if 1:\n    a()\nelse:\n    b()\n", {4}),
    ("if False:\n    a()\nelif True:\n    b()\nelse:\n    d()\n", {2, 6}),
    ("while False:\n    a()\nelse:\n    b()\n", {2}),
    ("while 0:\n    a()\n", {2}),
    ("def f():\n    if False:\n        def g():\n            a()\n        g()\n    b()\n", {4, 5}),
    # names are not constants: they may be set elsewhere, or matter for types
    ("if DEBUG:\n    a()\nif __debug__:\n    b()\nif TYPE_CHECKING:\n    c()\nwhile True:\n    d()\n", set()),
    ("if x == 0:\n    a()\nif not x:\n    b()\nif (0, ):\n    c()\n", set()),
])
def test_dead_branches(source, dead):
    assert _dead_lines(source) == dead


def test_dead_branches_hold_no_facts():
    model = build("""\
        import torch
        if False:
            import torch.nn as nn
            def train():
                pass
            x = 1
        """)
    assert model.names.aliases == {"torch": "torch"}
    assert "train" not in model.functions
    assert [a for a in model.assignments if a.kind == "assign"] == []


# Readers of the same fact on the two trees: libcst for this file, ``ast`` for the project's other
# modules. Each pair must read every expression alike (one fact, two readers).
_READ_ALIKE = ["a", "self.model.module", "a.b[0].c", "f(x).y", "(a).b", "a[0]", "f()", "1", "'s'",
               "enumerate(self.convs)", "enumerate(self.convs, 1)", "zip(self.a, self.b)", "self.layers[i]",
               "getattr(self, f'conv{i}')", "getattr(other, 'x')", "nn.MaxPool2d(2)", "F.relu(x)",
               "list()", "iter(x for x in self.blocks)", "reversed(self.blocks[1:])"]


@pytest.mark.parametrize("text", _READ_ALIKE)
def test_ast_and_libcst_readers_agree(text):
    import ast

    from torchlint.model.ast_reading import ast_dotted
    from torchlint.model.expr import dotted

    on_ast, on_cst = ast.parse(text, mode="eval").body, cst.parse_expression(text)
    assert ast_dotted(on_ast) == dotted(on_cst)


def test_ancestors_climbed_from_the_model_are_the_searched_ones():
    """``tree.ancestors`` climbs ``FileModel.parents`` when given them: the same chain as the
    search of the root, for every node of every fixture under every scope holding it."""
    from pathlib import Path

    from torchlint.model.tree import ancestors
    from torchlint.model.walk import walk

    fixtures = sorted(Path(__file__).parent.parent.joinpath("fixtures").glob("*/bad.py"))
    assert fixtures
    for path in fixtures:
        file_model = FileModel(cst.parse_module(path.read_text()), str(path))
        nodes: list = []
        walk(file_model.module, nodes.append, lambda node: None)
        for scope in file_model.scopes:
            for node in nodes[::7]:
                assert ancestors(scope.node, node, file_model.parents) == ancestors(scope.node, node), (path, node)


def _reaching_by_scan(scope, path, order):
    """``leaves.reaching_value`` as it was written before its index: every assignment of
    the scope read in turn, each target asked whether it binds ``path``."""
    from torchlint.model.expr import bound_paths, dotted

    found = None
    for a in scope.assignments:
        if a.order >= order:
            break
        if a.kind in ("del", "aug"):
            continue
        for target in a.targets:
            if type(target) in (cst.Tuple, cst.List):
                pairs = a.value.elements if isinstance(a.value, (cst.Tuple, cst.List)) else None
                for i, el in enumerate(target.elements):
                    if path in bound_paths(el.value):
                        whole = pairs is None or len(pairs) != len(target.elements) or dotted(el.value) != path
                        found = (a, a.value if whole else pairs[i].value)
                        break
            elif dotted(target) == path:
                found = (a, a.value)
    return found


def test_reaching_value_is_the_last_binding_before_the_order():
    from conftest import CORPUS, FIXTURES
    from torchlint.model.expr import bound_paths
    from torchlint.model.leaves import reaching_value

    extra = "a, (b, c) = x, (y, z)\nb = c = 1\np, p = 1, 2\n[q, *r] = s\nt += 1\ndel t\nt.u = 2\nt.u, w = 3, 4\n"
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))]
    asked = 0
    for text in texts + [extra]:
        model = FileModel(cst.parse_module(text))
        for scope in model.scopes:
            paths = {p for a in scope.assignments for t in a.targets for p in bound_paths(t)} | {"never_bound"}
            orders = sorted({a.order for a in scope.assignments} | {a.order + 1 for a in scope.assignments} | {0, 10**9})
            for path in paths:
                for order in orders:
                    assert reaching_value(model, scope, path, order) == _reaching_by_scan(scope, path, order), (path, order)
                    asked += 1
    assert asked > 10_000


def test_a_scopes_backward_and_gradient_calls_in_order():
    m = build("""
        import torch
        from torch import autograd as ag

        def step(model, x, opt):
            loss = model(x).sum()
            grads = ag.grad(loss, model.parameters(), create_graph=True)
            loss.backward()
            opt.step()
            torch.autograd.backward([loss])

        def evaluate(model, x):
            return model(x)
    """)
    step, evaluate = m.functions["step"][0], m.functions["evaluate"][0]
    spelled = lambda calls: [c.callee for c in calls]
    assert spelled(m.backwards_in(step)) == ["loss.backward", "torch.autograd.backward"]
    assert spelled(m.differentiations_in(step)) == ["ag.grad", "loss.backward", "torch.autograd.backward"]
    assert m.backwards_in(evaluate) == () and m.differentiations_in(evaluate) == ()


def test_a_training_call_is_a_backward_or_an_optimizer_step():
    m = build("""
        import torch

        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loss.backward()
        optimizer.step()
        scaler.step(optimizer)
        scheduler.step()
        env.step(action)
        ag = torch.autograd.grad(loss, x)
    """)
    assert [c.callee for c in m.calls if m.is_training_call(c)] == [
        "loss.backward", "optimizer.step", "scaler.step"]


def test_autograd_is_needed_by_gradients_and_optimizer_steps():
    m = build("""
        import torch

        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loss.backward()
        optimizer.step()
        scheduler.step()
        ag = torch.autograd.grad(loss, x)
        x.requires_grad_()
        h.register_hook(print)
        env.step(action)
        out.detach()
    """)
    assert [c.callee for c in m.calls if m.needs_autograd(c)] == [
        "loss.backward", "optimizer.step", "torch.autograd.grad", "x.requires_grad_", "h.register_hook"]


def test_call_answers_kept_once_asked_see_imports_and_defs_made_after_it():
    """``qualify`` and ``resolve`` are kept in the model's memo once asked, after the build: an import
    or a ``def`` below the call counts, as Python would have bound it by the time it runs."""
    m = build("""
        def train(loss):
            T.autograd.backward(loss)
            helper(loss)

        import torch as T

        def helper(loss):
            pass
    """)
    backward, helper = m.functions["train"][0].calls
    for _ in range(2):  # the kept answer is the answer
        assert m.qualify(backward) == "torch.autograd.backward"
        assert m.resolve(helper) is m.functions["helper"][0]
        assert m.resolve(backward) is None and m.qualify(helper) is None


@pytest.mark.parametrize("call, callee, receiver, method", [
    ("a.b.c(x)", "a.b.c", "a.b", "c"),
    ("f(x)", "f", None, "f"),
    ("f(x)[0].g()", None, None, "g"),
    ("(lambda: 1)()", None, None, None),
])
def test_a_calls_callee_receiver_and_method(call, callee, receiver, method):
    site = build(call + "\n").calls[0]
    assert (site.callee, site.receiver, site.method) == (callee, receiver, method)


def test_a_with_block_without_a_mode_keeps_the_mode_it_sits_in():
    m = build("""
        import torch
        with torch.no_grad():
            with open("log") as f:
                a = model(x)
                def inner():
                    return model(x)
            with torch.enable_grad():
                b = model(x)
        c = model(x)
    """)
    grads = {a.targets[0].value: a.site.grad for a in m.assignments if a.kind == "assign"}
    assert grads == {"a": GradMode.NO_GRAD, "b": GradMode.GRAD, "c": None}
    assert m.functions["inner"][0].def_grad is GradMode.NO_GRAD


def test_a_request_made_while_its_answer_is_computed_gets_the_placeholder():
    """``derived``'s ``while_computing``: a call cycle asks again for what it is working out."""
    m = build("x = 1\n")
    inner_answers = []

    def analysis(model, n):
        inner_answers.append(model.derived(analysis, n, while_computing="in a cycle"))
        return "computed"

    assert m.derived(analysis, 1, while_computing="in a cycle") == "computed"
    assert inner_answers == ["in a cycle"]
    assert m.derived(analysis, 1) == "computed"  # kept: not computed again
    assert inner_answers == ["in a cycle"]


def test_a_call_from_inside_a_cycle_tells_nothing_of_its_functions_grad_mode():
    """Only ``walk`` calls itself besides the ``no_grad`` block: the recursive call, asked while
    ``walk``'s mode is worked out, answers ``InCallCycle`` and is left out; the block decides."""
    from torchlint.model.grad_modes import grad_at

    m = build("""
        import torch

        def walk(node):
            node.visit()
            for child in node.children:
                walk(child)

        with torch.no_grad():
            walk(root)
    """)
    [recursive] = [c for c in m.calls if c.callee == "walk" and not c.scope.is_module]
    assert grad_of(m, "visit") is GradMode.NO_GRAD
    assert grad_at(m, recursive.site) is GradMode.NO_GRAD  # decided, and kept


@pytest.mark.parametrize("asked_first", ["train", "on_batch"])
def test_a_callback_that_calls_back_takes_its_functions_mode_whichever_is_asked_first(asked_first):
    """``on_batch`` is never called here, so it runs as ``train`` does; ``train``'s mode is worked
    out through the call inside ``on_batch``. Asked about ``train`` first, ``on_batch`` was left
    with the cycle's placeholder for good, and its calls had no mode at all."""
    from torchlint.model.grad_modes import scope_grad

    m = build("""
        import torch

        def train(model, batches):
            def on_batch(batch):
                model(batch).sum().backward()
                train(model, batch.children)
            hooks.register(on_batch)

        with torch.no_grad():
            train(net, data)
    """)
    scope_grad(m, next(s for s in m.scopes if s.name == asked_first))
    assert grad_of(m, "backward") is GradMode.NO_GRAD
