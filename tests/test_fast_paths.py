"""The gate, the cache and the process pool change speed, never results."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import CORPUS, FIXTURES, run_cli, without_gates
from torchlint.engine import lint_source
from torchlint.rules import ALL_RULES
from torchlint.request import LintRequest

SOURCES = sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))


def _json(*args, cwd=None):
    proc = run_cli("check", "--output-format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_gates_never_hide_a_finding(monkeypatch):
    gated = [lint_source(p.read_bytes(), str(p), ALL_RULES).diagnostics for p in SOURCES]
    without_gates(monkeypatch)
    ungated = [lint_source(p.read_bytes(), str(p), ALL_RULES).diagnostics for p in SOURCES]
    assert gated == ungated
    assert sum(map(len, gated)) > 20


def test_jobs_do_not_change_results_or_order():
    serial = _json("--no-cache", "--jobs", "1", *SOURCES)
    parallel = _json("--no-cache", "--jobs", "2", *SOURCES)
    assert serial == parallel and len(serial) > 20


@pytest.fixture
def tree(project):
    shutil.copytree(FIXTURES, project / "fixtures")
    return project


def test_cache_gives_the_same_results_and_sees_edits(tree):
    cold = _json("fixtures", cwd=tree)
    assert (tree / ".torchlint_cache" / ".gitignore").read_text().strip().endswith("*")
    warm = _json("fixtures", cwd=tree)
    assert warm == cold
    bad = tree / "fixtures" / "TL301_stored_loss" / "bad.py"
    bad.write_text(bad.read_text().replace("losses.append(loss)", "losses.append(loss.item())"))
    edited = _json("fixtures", cwd=tree)
    assert len(edited) == len(cold) - 1


def test_no_cache_writes_nothing(tree):
    _json("--no-cache", "fixtures", cwd=tree)
    assert not (tree / ".torchlint_cache").exists()


QUIET_SOURCES = {  # no default rule's text gate admits these: runner answers without the engine
    "empty.py": b"",
    "library.py": b"import math\n\n\ndef area(r):\n    return math.pi * r * r\n",
    "bom.py": b"\xef\xbb\xbfx = 1\n",
    "latin1.py": b"# -*- coding: latin-1 -*-\nname = '\xe9'\n",
    "broken.py": b"def f(:\n    pass\n",
    "null.py": b"x = 1\0\n",
    "unclosed.py": b"x = (\n",
    "noqa.py": b"x = 1  # noqa: TL301\n",
}


def _through_the_engine(monkeypatch, path, data, codes):
    from torchlint import runner

    with monkeypatch.context() as patched:
        patched.setattr(runner, "_checked_without_rules", lambda *args: None)
        return runner.lint_data(path, data, LintRequest.of(codes))


@pytest.mark.parametrize("codes", ["default", "all", "all but TL001"])
def test_the_light_path_answers_as_the_engine_does(monkeypatch, codes):
    from torchlint import runner
    from torchlint.catalogue import RULES
    from torchlint.codes import PARSE_ERROR, UNUSED_NOQA

    chosen = {"default": {c for c, (_, on) in RULES.items() if on} | {PARSE_ERROR},
              "all": set(RULES) | {PARSE_ERROR, UNUSED_NOQA},
              "all but TL001": set(RULES)}[codes]
    sources = dict(QUIET_SOURCES, **{p.name: p.read_bytes() for p in SOURCES})
    for name, data in sources.items():
        light = runner.lint_data(name, data, LintRequest.of(chosen))
        assert light == _through_the_engine(monkeypatch, name, data, chosen), name


def test_quiet_sources_never_reach_the_engine_and_gated_ones_do(monkeypatch):
    from torchlint import engine, runner

    def refuse(*args, **kwargs):
        raise AssertionError("the engine was asked")

    monkeypatch.setattr(engine, "lint_source", refuse)
    codes = {"TL001", "TL101", "TL301"}
    assert runner.lint_data("broken.py", QUIET_SOURCES["broken.py"], LintRequest.of(codes)).diagnostics[0].code == "TL001"
    assert runner.lint_data("library.py", QUIET_SOURCES["library.py"], LintRequest.of(codes)).diagnostics == []
    with pytest.raises(AssertionError, match="engine was asked"):  # TL010 must judge the comment
        runner.lint_data("noqa.py", QUIET_SOURCES["noqa.py"], LintRequest.of(codes | {"TL010"}))
    with pytest.raises(AssertionError, match="engine was asked"):  # TL301's gate admits it
        runner.lint_data("loop.py", b"for x in loader:\n    loss.backward()\n    total += loss\n", LintRequest.of(codes))


def test_a_run_on_a_file_no_rule_can_apply_to_never_imports_libcst(tmp_path):
    import subprocess
    import sys

    (tmp_path / "empty.py").write_bytes(b"")
    script = ("import sys; from torchlint.cli import main; code = main(['check', '--no-cache', 'empty.py']);"
              "print('libcst' in sys.modules, code)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert proc.stdout.split()[-2:] == ["False", "0"], proc.stdout + proc.stderr


GRAD_MENTIONS = {  # TL506's regex admits all of these; only the last assigns a misspelled flag
    "reads.py": b"import torch\nw = torch.zeros(3, requires_grad=True)\nprint(w.grad)\n",
    "real_flag.py": b"import torch\nw = torch.zeros(3)\nw.requires_grad = True\n",
    "docstring.py": b'"""Set p.require_grad = False to freeze."""\nx = 1\n',
    "typo.py": b"import torch\nw = torch.zeros(3)\nw.require_grad = True\n",
}


def test_a_text_check_sends_what_it_turns_down_down_the_light_path(monkeypatch):
    """TL506 asks the text whether it assigns a misspelled flag: a mere mention of ``grad``
    (nearly every torch file) no longer costs a parse and a tree gate."""
    from torchlint import engine, runner

    asked = []
    real = engine.lint_source
    monkeypatch.setattr(engine, "lint_source", lambda source, path, *a, **k: asked.append(path) or real(
        source, path, *a, **k))
    found = {name: [d.code for d in runner.lint_data(name, data, LintRequest.of({"TL001", "TL506"})).diagnostics]
             for name, data in GRAD_MENTIONS.items()}
    assert asked == ["docstring.py", "typo.py"]  # the docstring's example: the tree gate's business
    assert found == {"reads.py": [], "real_flag.py": [], "docstring.py": [], "typo.py": ["TL506"]}


def test_the_catalogues_text_checks_are_the_rules():
    from torchlint import text_checks
    from torchlint.catalogue import TEXT_CHECKS

    assert TEXT_CHECKS == {rule.code: rule.text_check.__name__ for rule in ALL_RULES if rule.text_check}
    for code, name in TEXT_CHECKS.items():
        rule = next(r for r in ALL_RULES if r.code == code)
        assert getattr(text_checks, name) is rule.text_check
