"""Fuzzing: torchlint never crashes, never reports an internal error, never loses a finding.

Inputs: programs from hypothesmith (Python's grammar), torch-shaped programs
from a small generator below (training loops, no_grad blocks, stored losses:
the shapes the rules look at), and mutations of the fixtures (truncated,
lines deleted, bytes flipped, nesting added). Every input goes through the
engine with all rules, the flake8 plugin and the fixer.

Invariants, for every input:

* no exception escapes and no internal error (TL002) is reported;
* Python parses it -> no TL001; neither Python nor libcst parses it -> TL001;
* the flake8 plugin reports what the engine reports (before ``# noqa``);
* the text and tree gates change nothing: with them off, the same findings;
* a fix the fixer writes parses and brings in no code the input lacked.

``TORCHLINT_FUZZ=long`` runs many more examples (docs/robustness.md); the
default CI profile is small and derandomized, so CI stays fast and repeatable.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CORPUS, FIXTURES, ROOT, without_gates
from torchlint import cst_parse, fix_files
from torchlint.fixer import allowed_fixes
from torchlint.engine import INTERNAL_ERROR, PARSE_ERROR, lint_source, with_room
from torchlint.flake8_plugin import TorchlintChecker
from torchlint.rules import ALL_RULES
from torchlint.request import LintRequest

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
          HealthCheck.large_base_example]
settings.register_profile("ci", max_examples=75, deadline=None, derandomize=True, database=None,
                          suppress_health_check=_QUIET)
settings.register_profile("long", max_examples=2000, deadline=None, database=None,
                          suppress_health_check=_QUIET, print_blob=True)
PROFILE = os.environ.get("TORCHLINT_FUZZ", "ci")
settings.load_profile(PROFILE)

SEEDS = sorted(FIXTURES.glob("*/*.py"))
REGRESSIONS = Path(__file__).resolve().parent / "data" / "regressions"


# -- the invariants ------------------------------------------------------------

def python_parses(source) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def libcst_parses(text: str) -> bool:
    try:
        with_room(len(text), cst.parse_module, text)
    except Exception:
        return False
    return True


def _decoded(source):
    if isinstance(source, str):
        return source
    try:
        return fix_files.decode_file(source)[0]
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def check_invariants(source, *, gates_too: bool = True) -> list:
    """Run every surface on ``source`` (str or bytes); assert the invariants; return the findings."""
    result = lint_source(source, "fuzz.py", ALL_RULES)
    internal = [e.message for e in result.errors if e.internal]
    assert not internal, internal
    codes = [d.code for d in result.diagnostics]
    assert INTERNAL_ERROR not in codes
    text = _decoded(source)
    if python_parses(source):
        assert PARSE_ERROR not in codes, result.diagnostics
    elif PARSE_ERROR not in codes:  # only where libcst (newer syntax than this Python) accepts it
        assert text is not None and libcst_parses(text), (result.diagnostics, result.errors)
    if text is None or PARSE_ERROR in codes or not python_parses(text):
        return result.diagnostics
    # flake8: it hands the plugin its tree and lines, and applies noqa itself.
    tree = ast.parse(text)
    plugin = TorchlintChecker(tree, text.splitlines(keepends=True), "fuzz.py")
    from_flake8 = sorted((line, col + 1, msg.split(" ", 1)[0]) for line, col, msg, _ in plugin.run())
    assert not [c for c in from_flake8 if c[2] == INTERNAL_ERROR], from_flake8
    # The plugin lints for the target torch version of the project around the file
    # (this repository's: its test extra says torch>=2.1); the engine is told the same.
    target = TorchlintChecker.settings().resolve("fuzz.py").target_torch
    unsuppressed = lint_source(text, "fuzz.py", ALL_RULES, apply_noqa=False, target_torch=target).diagnostics
    plugin_codes = TorchlintChecker.settings().codes_for("fuzz.py")  # opt-in rules need naming
    assert from_flake8 == sorted((d.line, d.col, d.code) for d in unsuppressed if d.code in plugin_codes)
    if gates_too:
        assert _ungated(text, target) == unsuppressed
    _check_pieces(text, tree)
    _check_fixer(text, unsuppressed)
    return result.diagnostics


def _check_pieces(text: str, tree) -> None:
    """Parsed in pieces, with a cut before every top-level statement it can, the
    module is the whole parse (cst_parse.py)."""
    cuts = cst_parse.cut_lines(tree, text, every=1)
    if not cuts or not libcst_parses(text):
        return
    def same() -> bool:  # the whole parse, not the text: libcst drops a line of '\nA\n\n ' too
        joined, whole = cst_parse.parse_module(text, cuts), cst.parse_module(text)
        return joined.code == whole.code and joined.deep_equals(whole)

    assert with_room(len(text), same)


def _ungated(text: str, target=None) -> list:
    with pytest.MonkeyPatch.context() as monkeypatch:  # hypothesis runs it many times in one test
        without_gates(monkeypatch)
        return lint_source(text, "fuzz.py", ALL_RULES, apply_noqa=False, target_torch=target).diagnostics


def _check_fixer(text: str, before: list) -> None:
    if not any(getattr(d, "fix", None) for d in before):
        return
    fixed = fix_files.fix_data("fuzz.py", text.encode("utf-8"), LintRequest.for_rules(ALL_RULES), allowed_fixes(True))
    assert fixed.error is None or "internal error" not in fixed.error, fixed.error
    if fixed.new is None:
        return
    new_text = fixed.new.decode("utf-8")
    assert python_parses(new_text) or not python_parses(text), new_text
    after = lint_source(new_text, "fuzz.py", ALL_RULES, apply_noqa=False)
    assert not [e for e in after.errors if e.internal]
    brought_in = {d.code for d in after.diagnostics} - {d.code for d in before}
    assert not brought_in, (brought_in, new_text)


# -- torch-shaped programs ---------------------------------------------------------

NAMES = ("model", "net", "loss", "losses", "total", "x", "y", "out", "optimizer", "opt", "w", "h",
         "hidden", "loader", "val_loader", "criterion", "self", "ctx", "batch", "i", "scaler", "meter")
METHODS = ("backward", "step", "zero_grad", "append", "item", "detach", "eval", "train", "add_",
           "zero_", "numpy", "cpu", "update", "extend", "to", "mul_", "clone", "requires_grad_")
CONTEXTS = ("torch.no_grad()", "torch.inference_mode()", "torch.enable_grad()",
            "torch.set_grad_enabled(phase == 'train')", "T.no_grad()", "no_grad()",
            "torch.autograd.set_detect_anomaly(True)", "open(p) as f")
DECORATORS = ("@torch.no_grad()", "@torch.inference_mode()", "@staticmethod", "@torch.jit.script",
              "@torch.enable_grad()")
FUNCS = ("train", "evaluate", "validate", "test", "forward", "training_step", "validation_step",
         "predict_step", "closure", "main", "run_epoch", "__init__", "backward")
IMPORTS = ("import torch", "import torch as T", "from torch import nn, optim",
           "from torch import no_grad", "import torch.nn.functional as F", "from torch import *",
           "from torch.autograd import Variable", "from torch.utils.checkpoint import checkpoint")

names = st.sampled_from(NAMES)


@st.composite
def expressions(draw, depth=0):
    kind = draw(st.integers(0, 9 if depth < 3 else 2))
    if kind == 0:
        return draw(names)
    if kind == 1:
        return draw(st.sampled_from(("0", "1.5", "None", "'s'", "True", "[]", "{}")))
    if kind == 2:
        return f"{draw(names)}.{draw(st.sampled_from(METHODS + ('grad', 'data', 'requires_grad')))}"
    if kind == 3:
        args = draw(st.lists(expressions(depth + 1), max_size=3))
        kw = draw(st.sampled_from(("", "retain_graph=True", "use_reentrant=True", "volatile=True",
                                   "dtype=torch.float32", "num_workers=0")))
        return f"{draw(expressions(depth + 1))}.{draw(st.sampled_from(METHODS))}({', '.join(args + ([kw] if kw else []))})"
    if kind == 4:
        return f"{draw(names)}({draw(expressions(depth + 1))})"
    if kind == 5:
        op = draw(st.sampled_from(("+", "-", "*", "@", "/", "and", "or", "if x else")))
        return f"({draw(expressions(depth + 1))} {op} {draw(expressions(depth + 1))})"
    if kind == 6:
        return f"[{draw(expressions(depth + 1))} for {draw(names)} in {draw(expressions(depth + 1))}]"
    if kind == 7:
        return f"{draw(names)}[{draw(expressions(depth + 1))}]"
    if kind == 8:
        return f"torch.{draw(st.sampled_from(('zeros', 'randn', 'tensor', 'cat', 'stack', 'no_grad')))}({draw(expressions(depth + 1))})"
    return f"F.{draw(st.sampled_from(('mse_loss', 'cross_entropy', 'relu')))}({draw(expressions(depth + 1))}, {draw(names)})"


@st.composite
def statements(draw, depth=0):
    kind = draw(st.integers(0, 14 if depth < 4 else 6))
    pad = "    " * depth
    if kind == 0:
        return [f"{pad}{draw(names)} = {draw(expressions())}"]
    if kind == 1:
        return [f"{pad}{draw(names)} {draw(st.sampled_from(('+=', '-=', '*=')))} {draw(expressions())}"]
    if kind == 2:
        return [f"{pad}{draw(expressions())}"]
    if kind == 3:
        return [f"{pad}{draw(names)}.{draw(st.sampled_from(METHODS))}({draw(names)})"]
    if kind == 4:
        return [pad + draw(st.sampled_from(("loss.backward()", "optimizer.step()", "optimizer.zero_grad()",
                                             "loss.backward(retain_graph=True)", "losses.append(loss)",
                                             "w -= lr * w.grad", "w = w - lr * w.grad",
                                             "loss.requires_grad = True", "ctx.saved = x",
                                             "model.eval()", "model.train()", "hidden = hidden.detach()")))]
    if kind == 5:
        return [pad + draw(st.sampled_from(("pass", "return loss", "return", "break", "continue",
                                             "del losses[:]", "global total", "yield out")))]
    if kind == 6:
        return [pad + draw(st.sampled_from(IMPORTS))]
    body = draw(st.lists(statements(depth + 1), min_size=1, max_size=4))
    lines = [line for stmt in body for line in stmt]
    if kind in (7, 8):
        head = f"for {draw(names)} in {draw(st.sampled_from(('loader', 'val_loader', 'range(10)', 'enumerate(loader)')))}:"
    elif kind == 9:
        head = f"with {draw(st.sampled_from(CONTEXTS))}:"
    elif kind == 10:
        decorator = draw(st.sampled_from(("",) + DECORATORS))
        args = draw(st.sampled_from(("self, batch, batch_idx", "model, loader, optimizer", "", "*args, **kw")))
        head = (f"{pad}{decorator}\n" if decorator else "") + f"{pad}def {draw(st.sampled_from(FUNCS))}({args}):"
        return [head] + lines
    elif kind == 11:
        head = f"class {draw(st.sampled_from(('Net', 'Module', 'LitModel', 'Fn')))}({draw(st.sampled_from(('nn.Module', 'torch.autograd.Function', 'object', '')))}):"
    elif kind == 12:
        head = f"if {draw(expressions())}:"
    elif kind == 13:
        head = "while True:"
    else:
        return [f"{pad}try:"] + lines + [f"{pad}except Exception:", f"{pad}    pass"]
    return [pad + head] + lines


@st.composite
def torch_programs(draw):
    header = draw(st.lists(st.sampled_from(IMPORTS), min_size=0, max_size=3))
    body = draw(st.lists(statements(), min_size=1, max_size=6))
    return "\n".join(header + [line for stmt in body for line in stmt]) + "\n"


# -- fixture mutations ------------------------------------------------------------------

@st.composite
def mutated_fixtures(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)).read_bytes())
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("truncate", "delete_lines", "flip", "duplicate", "nest",
                                     "indent", "crlf", "insert")))
        lines = bytes(data).splitlines(keepends=True)
        if kind == "truncate":
            data = data[:draw(st.integers(0, len(data)))]
        elif kind == "delete_lines" and lines:
            start = draw(st.integers(0, len(lines) - 1))
            del lines[start:start + draw(st.integers(1, 5))]
            data = bytearray(b"".join(lines))
        elif kind == "flip" and data:
            for _ in range(draw(st.integers(1, 4))):
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        elif kind == "duplicate" and lines:
            at = draw(st.integers(0, len(lines) - 1))
            lines.insert(at, lines[at])
            data = bytearray(b"".join(lines))
        elif kind == "nest" and lines:
            # wrap a run of lines in a block: for / with / def / if
            start = draw(st.integers(0, len(lines) - 1))
            stop = draw(st.integers(start, min(len(lines), start + 15)))
            head = draw(st.sampled_from((b"for _ in loader:\n", b"with torch.no_grad():\n",
                                         b"def evaluate(model):\n", b"if x:\n", b"while True:\n")))
            lines[start:stop] = [head] + [b"    " + line for line in lines[start:stop]]
            data = bytearray(b"".join(lines))
        elif kind == "indent" and lines:
            at = draw(st.integers(0, len(lines) - 1))
            lines[at] = draw(st.sampled_from((b"\t", b" ", b"  \t"))) + lines[at]
            data = bytearray(b"".join(lines))
        elif kind == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif kind == "insert":
            at = draw(st.integers(0, len(data)))
            junk = draw(st.sampled_from((b"\x00", b"\xef\xbb\xbf", b"# noqa", b"(", b")", b":", b"\\\n",
                                         b"'''", b"# -*- coding: latin-1 -*-\n", b"\r", b"\x0c",
                                         b"loss.backward(retain_graph=True)\n")))
            data[at:at] = junk
    return bytes(data)


# -- the tests --------------------------------------------------------------------

@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
def test_grammar_programs(source):
    check_invariants(source)


@given(torch_programs())
def test_torch_shaped_programs(source):
    check_invariants(source)


@given(mutated_fixtures())
def test_mutated_fixtures(data):
    check_invariants(data)


def _long(kind: str, n: int = 10_000) -> str:
    terms = {
        "sum": " + ".join(["loss"] * n), "and": " and ".join(["loss"] * n), "not": "not " * n + "loss",
        "attr": "loss" + ".a" * n, "call": "loss" + "(x)" * n, "list": "[" + ", ".join(["loss"] * n) + "]",
        "args": "f(" + ", ".join(["loss"] * n) + ")", "strings": " ".join(['"a"'] * n),
        "compare": " < ".join(["loss"] * n), "lambda": "lambda: " * n + "loss",
    }[kind]
    return ("import torch\n\ndef train(model, loader, optimizer):\n    for x in loader:\n"
            "        optimizer.zero_grad()\n        loss = model(x)\n        loss.backward()\n"
            f"        optimizer.step()\n        total = {terms}\n")


@pytest.mark.parametrize("kind", ["sum", "and", "not", "attr", "call", "list", "args", "strings", "compare", "lambda"])
def test_ten_thousand_element_expressions(kind):
    """Flat ones are analysed; ones too deep for Python itself get TL001; none crash.

    In a subprocess: a crash in libcst's native parser is a SIGSEGV, not an exception.
    """
    script = (
        "import json, sys\nsys.path.insert(0, 'tests')\nfrom test_fuzz import _long, check_invariants\n"
        f"found = check_invariants(_long({kind!r}), gates_too=False)\n"
        "print(json.dumps(sorted({d.code for d in found})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "TORCHLINT_FUZZ": "ci"})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    codes = json.loads(proc.stdout.splitlines()[-1])
    deep_for_python = not python_parses(_long(kind))
    assert codes == (["TL001"] if deep_for_python else []), codes


@pytest.mark.timeout(1800)  # its subprocess alone is allowed 600 s; pyproject.toml allows a test 600
def test_regression_inputs_are_handled():
    """Every saved crasher under tests/data/regressions/ lints without dying, in a subprocess."""
    files = sorted(REGRESSIONS.glob("*.py"))
    assert files
    script = (
        "import sys\nsys.path.insert(0, 'tests')\nfrom test_fuzz import check_invariants\n"
        "for path in sys.argv[1:]:\n"
        "    check_invariants(open(path, 'rb').read(), gates_too=False)\n"
        "    print('ok', path, flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, *map(str, files)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600, env={**os.environ, "TORCHLINT_FUZZ": "ci"})
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-1000:], proc.stderr[-2000:])
    assert proc.stdout.count("ok ") == len(files)


def test_same_results_whatever_the_hash_seed_and_jobs():
    """Sets and dicts must never decide the order or content of findings."""
    sources = [str(p) for p in sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))]
    outputs = []
    for seed, jobs in (("0", "1"), ("1", "2"), ("4242", "2")):
        proc = subprocess.run(
            [sys.executable, "-m", "torchlint", "check", "--no-cache", "--output-format", "json",
             "--jobs", jobs, *sources],
            capture_output=True, text=True, cwd=ROOT, timeout=300,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert proc.returncode in (0, 1), proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(json.loads(outputs[0])) > 20


def test_regression_self_recursive_function_is_not_taken_for_no_grad():
    """Found by mutating a fixture: a function called only from itself counted as no_grad code."""
    source = (REGRESSIONS / "tl102_self_recursive_function.py").read_text()
    result = lint_source(source, "x.py", ALL_RULES)
    assert "TL102" not in {d.code for d in result.diagnostics}
