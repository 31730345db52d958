"""The text gate answers like the rules' regexes, only faster (see text_gate.py)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlint.engine import lint_source
from torchlint.model.vocab import CONTAINER_METHODS, STORE_METHODS
from torchlint.rules import ALL_RULES, RULES_BY_CODE
from torchlint.text_gate import BACKWARD_CALL, EVAL_SWITCH_CALL, Pattern, gate_matches

ROOT = Path(__file__).resolve().parent.parent
GATE_PATTERNS = sorted({p for rule in ALL_RULES for p in rule.gate})


def agrees(pattern: str, text: str) -> bool:
    return gate_matches((Pattern(pattern),), text) == (re.search(pattern, text) is not None)


def shipped_sources() -> list:
    folders = [ROOT / "fixtures", ROOT / "tests" / "corpus", ROOT / "src"]
    return [p.read_text(encoding="utf-8", errors="replace") for f in folders for p in sorted(f.rglob("*.py"))]


def test_every_gate_pattern_agrees_with_re_on_the_shipped_sources():
    sources = shipped_sources()
    assert len(sources) > 150
    wrong = [(pattern, i) for pattern in GATE_PATTERNS for i, text in enumerate(sources)
             if not agrees(pattern, text)]
    assert wrong == []


# Pieces of the gates' own vocabulary, glued at random, so that near misses
# (``no_grad(`` for ``\bgrad\s*\(``, ``dl`` inside ``handle``) come up often.
_PIECES = ["backward", "(", ")", " ", "\n", "=", "==", "+=", "]", "[", ".", "_", "self", ".step(",
           "grad", "no", "dl", "Dl", "han", "loader", "Loader", "class", "def ", "eval", "Val", "test",
           "ctx", ":", "True", "requires_grad", "utils", "checkpoint", "from torch.utils import ",
           "G", "D", "net", "gen", "GEN", "critic", "Predict", "SERV", "infer", "x", "1",
           "\u0130", "\u0131", "\u017f", "\u212a", "é", "autograd", "Function", "volatile",
           "def backward", "save_for_", "manual_", "\\", ".eval", ".train", "False", "0", "mode", "#"]


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_every_gate_pattern_agrees_with_re_on_generated_text(text):
    assert [p for p in GATE_PATTERNS if not agrees(p, text)] == []


@pytest.mark.parametrize("pattern, text, expected", [
    (r"backward\s*\(|autograd", "x.autograd", True),  # a whole branch: no regex needed
    (r"backward\s*\(|autograd", "backward_hook = 1", False),  # anchor, but no match
    (r"backward\s*\(|autograd", "loss.backward  ()", True),
    (r"\bgrad\s*\(", "torch.no_grad()", False),  # matches only where a word starts
    (r"\bgrad\s*\(", "x, = grad (y)", True),
    (r"[Dd]l\b", "handle(dl)", True),
    (r"[Dd]l\b", "handle(dls)", False),
    (r"(?i)predict", "PREDICT", True),
    (r"(?i)serv", "\u017fERV", True),  # re matches the long s; str.lower() keeps it
    (r"(?i)predict", "PRED\u0130CT", True),  # 'İ'.lower() is two characters
    (r"(?i)infer", "\u0131nfer", True),
    (r"a(b)|c(d)", "cd", True),
    (r"[]|]x|y", "|x", True),
    (r"(a)|b\1", "bb", False),  # back-references keep the pattern whole
    (BACKWARD_CALL, "ctx.save_for_backward(x)\n    def backward(ctx, g):", False),
    (BACKWARD_CALL, "loss.\\\n    backward()", True),
    (BACKWARD_CALL, "self.manual_backward(loss)", True),
    (BACKWARD_CALL, "backward(loss)", True),
    (EVAL_SWITCH_CALL, "model.train(mode=False)", True),
    (EVAL_SWITCH_CALL, "model.eval( )", True),
    (EVAL_SWITCH_CALL, "model.train()", False),
    (r"\b(?:solve|eig)\b", "h = weight.eig()", True),  # tried where a word begins
    (r"\b(?:solve|eig)\b", "height = solver", False),
    (r"\b(?:solve|eig)\b", "x.solve", True),
    (r"(eig|solve)s", "solves", True),
])
def test_hand_picked_cases(pattern, text, expected):
    assert gate_matches((Pattern(pattern),), text) is expected
    assert agrees(pattern, text)


def test_a_gate_needs_every_pattern():
    gate = (Pattern("no_grad"), Pattern(r"backward\s*\("))
    assert gate_matches(gate, "with torch.no_grad():\n    loss.backward()\n")
    assert not gate_matches(gate, "with torch.no_grad():\n    pass\n")


def test_the_slow_gates_are_answered_by_substrings():
    """The regexes that cost the most on the benchmark corpus (see bench/README.md)
    must keep anchors on every branch, or they fall back to scanning with ``re``."""
    for code in ("TL101", "TL301", "TL304"):
        for pattern in RULES_BY_CODE[code].gate:
            branches = Pattern(pattern).branches
            if "[Ll]oader" in pattern:
                assert all(b.anchors is not None for b in branches), (code, pattern)
    (grad,) = Pattern(r"\bgrad\s*\(").branches
    assert grad.starts == ("grad",)
    # TL701's gate: "eig" is in every "weight", so it is tried only where its words are.
    (removed,) = Pattern(RULES_BY_CODE["TL701"].gate[0]).branches
    assert removed.starts is not None and "eig" in removed.starts


APPENDLEFT_ONLY = '''
import collections


def train(model, loader, optimizer, criterion):
    recent = collections.deque(maxlen=10)
    for x, y in loader:
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        recent.appendleft(loss)
    return recent
'''


def test_every_store_method_a_rule_reads_opens_its_text_gate():
    """The gates spell their method lists from vocab, as the rules read them:
    TL301's once left out ``appendleft`` and hid a finding."""
    tl301, tl304 = RULES_BY_CODE["TL301"], RULES_BY_CODE["TL304"]
    for method in STORE_METHODS:
        assert re.search(tl301.gate[0], f"history.{method}(loss)"), method
    kept_on_self = next(pattern for pattern in tl304.gate if pattern.startswith(r"self\."))
    for method in CONTAINER_METHODS:
        assert re.search(kept_on_self, f"self.meter.{method}(val)"), method
    assert tl301.may_apply(APPENDLEFT_ONLY)
    assert [d.line for d in lint_source(APPENDLEFT_ONLY, "t.py", [tl301]).diagnostics] == [12]


def test_the_optimizer_word_is_in_every_name_taken_for_an_optimizer():
    """TL302's gate stands for ``is_optimizer_name`` on the code's names: it may match more
    names, never fewer. Checked on every short name over the letters that matter."""
    import itertools
    import random

    from torchlint.model.vocab import OPTIMIZER_WORD, is_optimizer_name

    word = re.compile(OPTIMIZER_WORD)
    names = ["optimizer", "optim", "opt", "opts", "g_opt", "optD", "netOpt", "OPT", "G_OPTS", "optimizerG",
             "OPTAb", "my_OPTIM", "lr_opt2", "Optim", "opt_state"]
    rng = random.Random(6)
    pieces = ["opt", "Opt", "OPT", "im", "IM", "s", "S", "ion", "a", "X", "_", "1", "t", "T", "p", "o", "O"]
    names += ["".join(rng.choice(pieces) for _ in range(rng.randint(2, 6))) for _ in range(20000)]
    names += ["".join(p) for p in itertools.product("oOpPtTsSiI_x", repeat=4)]
    taken = [n for n in names if is_optimizer_name(n)]
    assert len(taken) > 100
    assert [n for n in taken if not word.search(n)] == []
    assert not any(word.search(n) for n in ("Optional", "options", "adoption", "optical_flow"))


@pytest.mark.parametrize("source, expected", [
    ("from .engine import(train_step)\nfor b in loader:\n    train_step(model, opt, b)\n", True),  # no space
    ("from .engine import train_step\nfor b in loader:\n    train_step(model, optimizer, b)\n", True),
    ("from typing import Optional\nfor b in loader:\n    show(b)\n", False),  # 'Optional' is no optimizer
])
def test_retain_graph_gate_reads_any_import_and_optimizer_words_only(source, expected):
    from torchlint.rules import RULES_BY_CODE

    assert RULES_BY_CODE["TL302"].may_apply(source) is expected


def _data_index_spellings(rng) -> str:
    """``(x.data.cpu())[0]`` and its kin, spaced, continued and commented at random: inside
    brackets, where Python lets the pieces stand on lines of their own."""
    def gap():
        return rng.choice(["", " ", "\n", "  # note\n", "\\\n"])

    base = rng.choice(["x", "loss", "self.loss", "f(a)", "out[1]"])
    expr = f"{base}{gap()}.{gap()}data"
    if rng.random() < 0.3:
        expr = f"({gap()}{expr}{gap()})"
    for _ in range(rng.randint(0, 3)):
        step = rng.choice(["cpu", "cuda", "detach", "numpy", "clone"])
        args = rng.choice(["", "non_blocking=True", "device=torch.device('cuda')", "dev=torch.device(f(1, [2]))"])
        expr = f"{expr}{gap()}.{gap()}{step}{gap()}({args})"
        if rng.random() < 0.2:
            expr = f"({expr}{gap()})"
    return f"y = ({expr}{gap()}[{rng.choice(['', ' '])}0{rng.choice(['', ' '])}])\n"


def test_the_data_index_text_check_admits_every_tree_the_gate_admits():
    """TL505's text check stands for its tree gate (its declared ``Indexed`` shape) on the text:
    it may admit more, never less."""
    import ast
    import random

    from torchlint.rules import RULES_BY_CODE
    from torchlint.text_checks import indexes_data_with_zero
    from torchlint.tree_gate import TreeIndex

    needs = RULES_BY_CODE["TL505"].needs

    rng = random.Random(505)
    checked = 0
    for _ in range(3000):
        text = _data_index_spellings(rng)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if needs.found_in(TreeIndex(tree, text)):
            checked += 1
            assert indexes_data_with_zero(text), text
    assert checked > 1000
    for text in ("y = x.data[1]\n", "y = metadata[0]\n", "y = x.data.float()[0]\n", "data = x[0]\n",
                 "y = x.datas[0]\n", "x.data.cpu()\ny = z[0]\n"):
        assert not indexes_data_with_zero(text), text


_NAME_PIECES = st.sampled_from(["val", "Val", "VAL", "valid", "Validation", "test", "Test", "TEST", "dev", "Dev",
                                "holdout", "HOLDOUT", "eval", "x", "X", "data", "Data", "interval", "value",
                                "device", "latest", "2", "_", "_", "y", "Images"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_NAME_PIECES, min_size=1, max_size=5))
def test_a_token_spelling_matches_every_name_whose_tokens_hold_one_of_its_words(pieces):
    from torchlint.model.vocab import EVAL_DATA_TOKENS, token_spelling, tokens

    name = "".join(pieces)
    if any(token in EVAL_DATA_TOKENS for token in tokens(name)):
        assert re.search(token_spelling(EVAL_DATA_TOKENS), f"out = model({name})\n"), name


@pytest.mark.parametrize("name", ["interval", "values", "device", "latest_x", "Xval"])
def test_a_token_spelling_passes_over_words_that_only_contain_one(name):
    from torchlint.model.vocab import EVAL_DATA_TOKENS, token_spelling

    assert not re.search(token_spelling(EVAL_DATA_TOKENS), f"out = model({name})\n")
