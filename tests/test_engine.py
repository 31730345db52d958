"""Engine guarantees: a failing rule loses nothing else; torch is never imported; code never runs."""
from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

from conftest import FIXTURES, ROOT, STORED_LOSS, run_cli
from torchlint.engine import _admitted, lint_source
from torchlint.rule import Rule
from torchlint.rules import ALL_RULES

STORED = (FIXTURES / "TL301_stored_loss" / "bad.py").read_text()


class ExplodingRule(Rule):
    code = "TL999"
    name = "exploding"
    message = "never shown"

    def check(self, model):
        raise ValueError("boom")


def test_a_raising_rule_keeps_the_other_findings():
    result = lint_source(STORED, "bad.py", (ExplodingRule, *ALL_RULES))
    assert {d.code for d in result.diagnostics} == {"TL301"}
    [error] = result.errors
    assert error.internal and "TL999 (exploding): ValueError: boom" in error.message


def _run_with_exploding_rule(code: str):
    """Run a surface in a subprocess where TL301's check raises."""
    script = textwrap.dedent(f"""
        import sys
        from torchlint.rules.tl301_stored_loss import StoredLoss
        def boom(self, model):
            raise RuntimeError("boom")
        StoredLoss.check = boom
        {code}
    """)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)


def test_cli_reports_an_internal_error_exits_2_and_keeps_going():
    proc = _run_with_exploding_rule(
        "from torchlint.cli import main; sys.exit(main(['check', '--no-cache', 'fixtures/TL301_stored_loss', "
        "'fixtures/TL101_eval_without_no_grad/bad.py']))"
    )
    assert proc.returncode == 2
    assert "TL002" in proc.stderr and "TL301 (graph-kept-across-iterations): RuntimeError: boom" in proc.stderr
    assert "TL101" in proc.stdout  # the other rules and files still ran
    assert "Traceback" not in proc.stderr


def test_flake8_turns_an_internal_error_into_a_finding():
    proc = _run_with_exploding_rule(
        "from flake8.main.cli import main; sys.argv = ['flake8', '--isolated', '--select=TL', "
        "'fixtures/TL301_stored_loss/bad.py']; main()"
    )
    assert "TL002 internal error in TL301" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_linting_never_imports_torch():
    proc = subprocess.run(
        [sys.executable, "-c",
         "import sys\nfrom torchlint.cli import main\nmain(['check', 'fixtures'])\n"
         "assert not any(m == 'torch' or m.startswith('torch.') for m in sys.modules), 'torch imported'"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def test_linted_code_is_never_executed(tmp_path):
    marker = tmp_path / "executed"
    (tmp_path / "evil.py").write_text(textwrap.dedent(f"""
        import torch
        open({str(marker)!r}, "w").write("ran")
        def evaluate(model, loader):
            model.eval()
            for x in loader:
                model(x)
        __import__("os").system("touch {marker}")
    """))
    proc = run_cli("check", tmp_path / "evil.py")
    assert proc.returncode == 1 and "TL101" in proc.stdout
    assert not marker.exists()


def test_deeply_nested_code_does_not_crash():
    source = "import torch\nfor batch in val_loader:\n    x = " + "(" * 150 + "1" + ")" * 150 + "\n"
    source += "x = 1 + " + " + ".join(["a"] * 1500) + "\n"
    result = lint_source(source, "deep.py", ALL_RULES)
    assert all(not e.internal for e in result.errors)


def test_long_expressions_are_analysed_not_skipped():
    terms = " + ".join(["loss"] * 1500)
    source = textwrap.dedent(f"""
        import torch
        def train(model, loader, optimizer, criterion):
            total = 0
            for x, y in loader:
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
                total += {terms}
            return total
    """)
    result = lint_source(source, "long.py", ALL_RULES)
    assert result.errors == []
    assert [d.code for d in result.diagnostics] == ["TL301"]


_LAYOUT_SOURCES = [
    "# header comment\n\n#!x\nimport torch\n\n\n@dec\n@dec2(1)\ndef f(a,\n      b):\n    '''doc\n    more'''\n"
    "    return a + \\\n        b; c = 1\n\nclass A:\n\tdef g(self):\n\t\tif x:\n\t\t\treturn [i for i in\n\t\t\t\ty]\n"
    "x = 1  # trailing\n# final comment",  # no newline at the end, tab indents
    "import torch\r\n\r\nfor x in data:\r\n    loss = model(x)\r\n    losses.append(loss)\r\n",
    "",
    "\n\n\n",
    "x = 1\n\\\ny = 2\nz = 3; \\\n  w = 4\n",  # a backslash line before a statement
    "a = 1;\nif a: b = 2\n@d\n\n# c\n@e\nclass C: pass\n\r\nq = 1\rr = 2\n",
]
# Simple statement lines deep in compound statements, each generated alone under its
# block's indentation: continuation lines libcst indents (inside brackets, comments in
# them) and ones it prints as read (under the block's indentation, after a backslash, in
# a string), ``;`` parts, comments before a block's first statement, every kind of block.
_NESTED_SOURCES = [
    "def train(model, loader):\n    # before the first statement\n\n        # deeper comment\n"
    "    for x, y in loader:\n        loss = criterion(model(x),\n                         y)\n"
    "        grads = [p.grad for p in\n    model.parameters()]\n        out = f(a,\n  # inside\n"
    "                b); n = g(\n        c)\n        total = loss + \\\n            loss\n"
    "        s = '''é\n  é'''; é = h(é)\n    else:\n        pass\n",
    "class A:\n\tdef g(self):\n\t\twhile x:\n\t\t\ty = [i for i in\n\t\t\t\tz]\n\t\telse:\n\t\t\tq = 1\n"
    "\t\twith a as b, c:\n\t\t\tr = (1,\n\t\t\t     2)\n",
    "if a:\r\n    x = f(1,\r\n          2)\r\nelif b:\r\n    y = 2\r\nelif c: z = 3\r\nelse:\r\n"
    "    if d:\r\n        w = 4\r\n",
    "try:\n  a = 1\nexcept E as e:\n  b = f(e,\n        2)\nexcept (F, G):\n  pass\nelse:\n  c = 3\n"
    "finally:\n  d = [4,\n       5]\n",
    "for i in r:\n    @dec(i)\n    def g(a,\n          b):\n        return a\n    if i: j = 1; k = 2\n"
    "    t = g(i)  # trailing comment",  # no newline at the end
    "def f():\r    x = 1\r    if x:\r        y = (x,\r             x)\r",
    "def f():\n\f    x = 1\n    y = 2\n\n\n\t\n    z = 3\n",
]
if sys.version_info >= (3, 10):
    _NESTED_SOURCES.append("match m:\n  case 1:\n    x = f(1,\n          2)\n  case [a, *_]:\n\t# c\n"
                           "    y = a\n  case _:\n    if z:\n        w = 3\n")


def _syntax_nodes_and_parents(module):
    """The module's syntax nodes, the module itself left out (it takes the whole-module
    path), and their parents (the model's map)."""
    from conftest import nodes_and_parents

    nodes, parents = nodes_and_parents(module)
    return nodes[1:], parents


def test_positions_statement_by_statement_are_libcst_positions(monkeypatch):
    """positions.node_positions gives every node the range PositionProvider gives it over
    the whole module, on every fixture, every corpus file and layout oddities."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from conftest import CORPUS
    from torchlint import positions
    from torchlint.positions import RangeMemo, node_positions, statement_starts

    lines_alone = []
    real_line_ranges = positions._line_ranges
    monkeypatch.setattr(positions, "_line_ranges", lambda *a: lines_alone.append(1) or real_line_ranges(*a))
    texts = [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*/*.py"))
             + sorted(CORPUS.glob("*/*.py"))] + _LAYOUT_SOURCES + _NESTED_SOURCES
    checked = 0
    for text in texts:
        module = cst.parse_module(text)
        nodes, parents = _syntax_nodes_and_parents(module)
        whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        expected = [whole[n] for n in nodes]
        got = node_positions(module, nodes)
        assert [got[id(n)] for n in nodes] == expected
        # the same with the lines read off Python's own tree
        starts = statement_starts(ast.parse(text), text)
        got = node_positions(module, nodes, starts)
        assert [got[id(n)] for n in nodes] == expected
        # and with the parents, as the engine asks: nested simple statement lines alone,
        # kept in a memo and taken from it the second time
        memo = RangeMemo()
        for _ in range(2):
            got = node_positions(module, nodes, starts, memo, parents)
            assert [got[id(n)] for n in nodes] == expected
        checked += len(nodes)
    assert checked > 10_000
    assert len(lines_alone) > 1000


def test_positions_of_a_few_nodes_at_a_time_are_libcst_positions():
    """As the engine asks: a few nodes, lines and statements that hold one or several."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from torchlint.positions import node_positions, statement_starts

    for text in _LAYOUT_SOURCES + _NESTED_SOURCES:
        module = cst.parse_module(text)
        nodes, parents = _syntax_nodes_and_parents(module)
        whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        starts = statement_starts(ast.parse(text), text)
        for few in range(0, len(nodes), 7):
            some = nodes[few:few + 7:2]
            got = node_positions(module, some, starts, None, parents)
            assert [got[id(n)] for n in some] == [whole[n] for n in some]


def test_a_line_of_only_a_backslash_keeps_positions_as_they_were():
    """libcst leaves a line that is only a backslash continuation out of its tree (its
    lines after it are one fewer than Python's): nested lines then take their top-level
    statement's ranges, as every node did before lines were generated alone."""
    import libcst as cst

    from torchlint import positions
    from torchlint.positions import node_positions, statement_starts

    text = "def f():\n    x = 1\n    \\\n    y = g(x)\nz = 3\nfor i in r:\n    w = h(i)\n"
    module = cst.parse_module(text)
    assert module.code != text
    nodes, parents = _syntax_nodes_and_parents(module)
    starts = statement_starts(ast.parse(text), text)
    assert starts is not None and starts.lines is None
    by_top_level = node_positions(module, nodes, starts)
    assert node_positions(module, nodes, starts, None, parents) == by_top_level
    # a backslash after code continues a statement: libcst keeps it
    assert not positions._drops_a_line("def f():\n    x = 1 + \\\n        2\n    # c \\\n    y = 3\n")


def _edits_of(text: str):
    """Texts an editor would send after ``text``: a line changed, a line added, a line removed."""
    lines = text.split("\n")
    middle = len(lines) // 2
    changed = lines[:middle] + [lines[middle] + "  # edited"] + lines[middle + 1:]
    added = lines[:middle] + ["spare = 1"] + lines[middle:]
    removed = lines[:1] + lines[2:]
    return ["\n".join(changed), "\n".join(added), "\n".join(removed), text]


def test_lints_that_keep_a_memory_find_what_fresh_lints_find():
    """engine.LintMemory reuses parsed pieces and ranges of unchanged statements (the
    language server's lints); the findings and their positions are a fresh lint's."""
    from conftest import CORPUS
    from torchlint.engine import LintMemory

    long_text = "".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*/bad.py"))[:12])
    texts = [long_text] + [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*/*.py"))[:40]]
    memory = LintMemory()
    memory.pieces.piece_lines = 20  # many pieces, so that most are reused
    compared = 0
    for text in texts:
        for version in [text, *_edits_of(text)]:
            fresh = lint_source(version, "edited.py", ALL_RULES)
            kept = lint_source(version, "edited.py", ALL_RULES, memory=memory)
            assert kept.diagnostics == fresh.diagnostics and kept.errors == fresh.errors
            compared += len(fresh.diagnostics)
    assert compared > 100


def test_a_memory_parses_only_the_pieces_an_edit_touched(monkeypatch):
    import libcst as cst

    from torchlint import cst_parse
    from torchlint.engine import LintMemory

    text = "".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*/bad.py"))[:12])
    memory = LintMemory()
    memory.pieces.piece_lines = 20
    lint_source(text, "long.py", ALL_RULES, memory=memory)
    parsed = []
    real_parse = cst.parse_module
    monkeypatch.setattr(cst_parse.cst, "parse_module", lambda code: parsed.append(code) or real_parse(code))
    edited = _edits_of(text)[0]
    lint_source(edited, "long.py", ALL_RULES, memory=memory)
    assert len(parsed) == 1 and "# edited" in parsed[0] and parsed[0].count("\n") < text.count("\n") / 4


def test_a_cancelled_lint_stops_and_an_uncancelled_one_is_unchanged():
    import pytest

    from torchlint.engine import LintCancelled

    text = (FIXTURES / "TL301_stored_loss" / "bad.py").read_text(encoding="utf-8")
    asked = []

    def cancel_on_third_ask():
        asked.append(1)
        return len(asked) >= 3

    with pytest.raises(LintCancelled):
        lint_source(text, "bad.py", ALL_RULES, cancelled=cancel_on_third_ask)
    never = lint_source(text, "bad.py", ALL_RULES, cancelled=lambda: False)
    assert never.diagnostics == lint_source(text, "bad.py", ALL_RULES).diagnostics != []


def test_a_step_of_an_imported_model_part_is_no_internal_error():
    # mypy found it: TL101 asked the forward target of ``utils.decoder.decode_step(h)``, a
    # part of a model this file cannot name (None), for its name (AttributeError).
    source = textwrap.dedent("""\
        import torch
        import utils

        utils.decoder.eval()


        def decode(h):
            for t in range(10):
                h = utils.decoder.decode_step(h)
            return h
    """)
    result = lint_source(source, "decode.py", ALL_RULES)
    assert result.errors == []


def test_a_scaler_step_given_its_optimizer_by_keyword_is_no_internal_error():
    # mypy found it: TL206 read the identifiers of scaler.step's first positional argument,
    # None for ``scaler.step(optimizer=opt)`` (TypeError). The keyword is the optimizer too.
    source = textwrap.dedent("""\
        import torch

        scaler = torch.cuda.amp.GradScaler()
        for x in loader:
            loss = model(x)
            scaler.scale(loss).backward()
            scaler.step(optimizer=opt)
    """)
    result = lint_source(source, "amp.py", ALL_RULES)
    assert result.errors == []
    assert "TL206" in {d.code for d in result.diagnostics}  # no scaler.update() in the loop


class EveryProbeRule(Rule):
    """Walks the whole module itself, past the model: reports each ``probe()`` call, with a
    fix that deletes every ``probe()`` statement of the file."""
    code = "TL998"
    name = "every-probe"
    message = "probe"
    fix_safety = "safe"

    def check(self, model):
        from torchlint.model.walk import walk
        from torchlint.rule import Fix
        import libcst as cst

        lines, probes = [], []

        def enter(node):
            if isinstance(node, cst.SimpleStatementLine):
                lines.append(node)
            if isinstance(node, cst.Call) and getattr(node.func, "value", None) == "probe":
                probes.append((node, lines[-1]))

        walk(model.module, enter, lambda node: None)
        for node, line in probes:
            yield self.report(node, fix=Fix("drop", tuple((s, cst.RemoveFromParent()) for _, s in probes)))


def test_findings_and_fixes_in_dead_branches_are_dropped():
    source = textwrap.dedent("""\
        probe()
        if True:
            probe()
        else:
            probe()
        while 0:
            probe()
        if not True:
            probe()
    """)
    from torchlint.engine import lint_module
    import libcst as cst
    diagnostics, errors = lint_module(cst.parse_module(source), source, "m.py", [EveryProbeRule])
    assert not errors
    # the live findings stay; their fix would delete dead statements too, so they lose it
    assert [(d.line, d.fix) for d in diagnostics] == [(1, None), (3, None)]
    live = "probe()\nif x:\n    probe()\n"
    diagnostics, _ = lint_module(cst.parse_module(live), live, "m.py", [EveryProbeRule])
    assert [(d.line, d.fix is not None) for d in diagnostics] == [(1, True), (3, True)]


def _question(name: str, cost: int, answer: bool, asked: list, when_parsed: bool = False) -> type:
    """A stand-in rule: its tree question's cost and answer, and a log of its asking."""
    return type(name, (), {"question_cost": cost, "asked_when_parsed": when_parsed,
                           "needs_tree": classmethod(lambda cls, index: asked.append(name) or answer)})


def test_tree_questions_are_asked_cheapest_first_until_one_admits_the_file():
    asked: list = []
    costly = _question("costly", 40, False, asked)
    cheap_no = _question("cheap_no", 1, False, asked)
    cheap_yes = _question("cheap_yes", 2, True, asked)
    unasked = _question("unasked", 10, False, asked)
    walker = _question("walker", 10, False, asked, when_parsed=True)
    rules = [costly, unasked, walker, cheap_yes, cheap_no]
    # Parsed once ``cheap_yes`` admits it: the costlier questions go unasked and their rules
    # through (their checks find nothing where the answer would be no), but ``walker``'s.
    assert _admitted(rules, None) == [costly, unasked, cheap_yes]
    assert asked == ["cheap_no", "cheap_yes", "walker"]


def test_a_file_no_question_admits_has_every_question_asked():
    asked: list = []
    rules = [_question(name, cost, False, asked) for name, cost in (("b", 10), ("a", 1), ("c", 40))]
    assert _admitted(rules, None) == []
    assert asked == ["a", "b", "c"]


def test_an_internal_error_is_reported_on_one_line_however_long_its_message():
    """libcst's KeyError names a node, whose repr is its whole subtree: the report keeps a line of it."""
    import libcst as cst

    from torchlint.diagnostic import error_summary

    node = cst.parse_module("for x in y:\n" + "    z = x\n" * 2000).body[0]
    summary = error_summary(KeyError(node))
    assert summary.startswith("KeyError: For(") and summary.endswith(" ...")
    assert "\n" not in summary and len(summary) < 250
    assert error_summary(RuntimeError("boom")) == "RuntimeError: boom"  # a short message whole


def test_a_lint_leaves_its_tree_to_reference_counting_not_to_the_cyclic_collector():
    """The model's cycles (call site <-> scope, analyses holding the model) are broken when the
    lint is done: otherwise the collector traces every node of the tree before freeing it."""
    import gc

    import libcst as cst

    source = STORED_LOSS.format(suffix="") + "\n\nclass Net:\n    def forward(self, x):\n        return self.fc(x)\n"
    lint_source(source, "x.py", ALL_RULES)  # imports and first-use caches out of the way
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        result = lint_source(source, "x.py", ALL_RULES)
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, cst.CSTNode) or type(o).__name__ in ("FileModel", "Scope")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert [d.code for d in result.diagnostics] == ["TL301"]
    assert left == []


def test_positions_fall_back_to_libcsts_provider_with_the_same_spans(monkeypatch):
    """``positions._ranges`` without its codegen state (a libcst release that moved the private
    ``CodegenState`` or its hooks): PositionProvider's ranges, the same spans by id."""
    import libcst as cst

    from torchlint import positions

    module = cst.parse_module("def f(a, b):\n    return g(a)[b] + h(\n        b)  # c\n@d\nclass C: pass\n")
    expected = positions._ranges(module)

    class Moved:
        def __init__(self, *args):
            raise TypeError("CodegenState.__init__() got an unexpected keyword argument")

    monkeypatch.setattr(positions, "_SpanState", Moved)
    assert positions._ranges(module) == expected
