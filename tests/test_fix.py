"""``torchlint check --fix / --unsafe-fixes / --diff``: what fixes write, and what they leave alone.

Every fix is checked the way a user would: the fixed file parses, torchlint
no longer reports the hazard and reports nothing new, a second ``--fix``
changes nothing, and the rest of the file (comments, formatting, encoding,
line endings, permissions) is as it was.
"""
from __future__ import annotations

import ast
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from conftest import FIXTURES, ROOT, cli_findings, expected, run_cli
from torchlint.cli import main
from torchlint.fixer import fix_text
from torchlint.rule import Fix, Rule
from torchlint.rules import ALL_RULES, RULES_BY_CODE
from torchlint.request import LintRequest

FIXED_BY_US = ("TL101", "TL201", "TL301", "TL302")


def fixture(code: str) -> Path:
    [folder] = [p for p in FIXTURES.iterdir() if p.name.startswith(code + "_")]
    return folder


def check(*args, capsys):
    code = main(["check", "--no-cache", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def write(folder: Path, name: str, text: str, newline: str = "\n") -> Path:
    path = folder / name
    path.write_bytes(textwrap.dedent(text).replace("\n", newline).encode("utf-8"))
    return path


def codes_in(path: Path) -> set:
    return {code for found in cli_findings(str(path)).values() for _, _, code in found}


def without_docstrings(source: str) -> str:
    """The program without docstrings or comments, for comparing a fixed file with good.py."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant
        ) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def function(source: str, name: str) -> str:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.body = [n for n in node.body
                         if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
            return ast.dump(node)
    raise AssertionError(f"no function {name}")


def loop_statements(source: str, name: str) -> list:
    """The statements of the innermost loop of function ``name``, in any order."""
    loops = [n for n in ast.walk(ast.parse(function_node(source, name))) if isinstance(n, ast.For)]
    return sorted(ast.dump(stmt) for stmt in loops[-1].body)


def function_node(source: str, name: str) -> str:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.unparse(node)
    raise AssertionError(f"no function {name}")


# -- the fixture programs ----------------------------------------------------

@pytest.mark.parametrize("code", FIXED_BY_US)
def test_fixture_bad_file_is_fixed_and_stays_fixed(code, project, capsys):
    bad = fixture(code) / "bad.py"
    target = project / "bad.py"
    shutil.copy(bad, target)
    marked = expected(bad)
    original = target.read_text(encoding="utf-8")

    status, out, err = check("--fix", "--unsafe-fixes", "bad.py", capsys=capsys)
    assert status == 0, out + err
    assert out.splitlines()[-1] == f"Found {len(marked)} findings ({len(marked)} fixed, 0 remaining)."
    fixed = target.read_text(encoding="utf-8")
    assert fixed != original
    ast.parse(fixed)  # it parses
    assert codes_in(target) == set()  # the hazards are gone and nothing new is reported
    # Comments and docstrings all survive (the `# expect:` markers included).
    comments = [line.split("#", 1)[1] for line in original.splitlines() if "#" in line]
    assert all(any(c in line for line in fixed.splitlines()) for c in comments)

    status, out, _ = check("--fix", "--unsafe-fixes", "bad.py", capsys=capsys)
    assert (status, out) == (0, "All checks passed!\n")
    assert target.read_text(encoding="utf-8") == fixed  # a second --fix is a no-op


def _fixed_fixture(code: str, folder: Path) -> str:
    target = folder / f"{code}.py"
    shutil.copy(fixture(code) / "bad.py", target)
    assert main(["check", "--no-cache", "--fix", "--unsafe-fixes", str(target)]) == 0
    return target.read_text(encoding="utf-8")


def test_fixed_fixtures_match_their_good_versions(tmp_path, capsys):
    # TL302: the fixed program is good.py, docstrings and comments aside.
    good = (fixture("TL302") / "good.py").read_text(encoding="utf-8")
    assert without_docstrings(_fixed_fixture("TL302", tmp_path)) == without_docstrings(good)
    # TL101: good.py wraps validate's loop the same way (predict uses a decorator there).
    good = (fixture("TL101") / "good.py").read_text(encoding="utf-8")
    assert function(_fixed_fixture("TL101", tmp_path), "validate") == function(good, "validate")
    # TL201: good.py clears in each iteration of train's loop (after moving the batch, the
    # fix puts it first): the same statements.
    good = (fixture("TL201") / "good.py").read_text(encoding="utf-8")
    assert loop_statements(_fixed_fixture("TL201", tmp_path), "train") == loop_statements(good, "train")
    capsys.readouterr()


@pytest.mark.timeout(1800)  # its subprocess alone is allowed 600 s; pyproject.toml allows a test 600
def test_fixed_fixture_programs_still_run(tmp_path):
    pytest.importorskip("torch")
    paths = [tmp_path / f"{code}.py" for code in FIXED_BY_US]
    for code, path in zip(FIXED_BY_US, paths):
        shutil.copy(fixture(code) / "bad.py", path)
    assert main(["check", "--no-cache", "--fix", "--unsafe-fixes", *map(str, paths)]) == 0
    script = (
        "import runpy, sys\n"
        "for path in sys.argv[1:]:\n"
        "    runpy.run_path(path)['main'](iterations=2)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, *map(str, paths)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


# -- each fix on small programs ---------------------------------------------

EVAL = """\
import torch as T
from torch import nn


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    # every batch
    for x, y in val_loader:
        out = model(x)
        correct += (out.argmax(1) == y).sum().item()
    return correct
"""


def test_tl101_uses_the_files_torch_alias_and_adds_no_import(project, capsys):
    path = write(project, "ev.py", EVAL)
    assert check("--fix", "--unsafe-fixes", "ev.py", capsys=capsys)[0] == 0
    text = path.read_text()
    assert "    # every batch\n    with T.no_grad():\n        for x, y in val_loader:\n" in text
    assert text.count("import") == 2 and "import torch\n" not in text


def test_tl101_adds_import_torch_only_when_missing(project, capsys):
    source = '"""Eval."""\n# third party\n' + EVAL.replace("import torch as T\n", "")
    path = write(project, "ev.py", source)
    assert check("--fix", "--unsafe-fixes", "ev.py", capsys=capsys)[0] == 0
    text = path.read_text()
    assert text.startswith('"""Eval."""\n# third party\nimport torch\nfrom torch import nn\n')
    assert "with torch.no_grad():" in text
    path.write_text(source.replace("from torch import nn", "from torch import nn, no_grad"))
    assert check("--fix", "--unsafe-fixes", "ev.py", capsys=capsys)[0] == 0
    text = path.read_text()
    assert "    with no_grad():\n" in text and "import torch\n" not in text


def test_tl101_wraps_a_single_statement_outside_loops(project, capsys):
    path = write(project, "one.py", """\
        import torch

        model = torch.nn.Linear(2, 2)
        x_test = torch.zeros(64, 2)
        model.eval()
        out = model(x_test)  # the forward, over the whole test set
        print(out)
    """)
    assert check("--fix", "--unsafe-fixes", "one.py", capsys=capsys)[0] == 0
    wrapped = "model.eval()\nwith torch.no_grad():\n    out = model(x_test)  # the forward, over the whole test set\nprint(out)\n"
    assert wrapped in path.read_text()


def test_tl101_offers_no_fix_in_generators(project, capsys):
    path = write(project, "gen.py", """\
        import torch

        def predict(model, test_loader):
            model.eval()
            for x in test_loader:
                yield model(x)
    """)
    before = path.read_bytes()
    status, out, err = check("--fix", "--unsafe-fixes", "gen.py", capsys=capsys)
    assert status == 1 and "TL101" in out and path.read_bytes() == before


def test_tl101_imports_torch_when_only_type_checkers_see_it(project, capsys):
    # ``import torch`` under ``if TYPE_CHECKING:`` binds nothing at run time: the fix
    # must import it for real, or the fixed program raises NameError.
    path = write(project, "typed.py", """\
        from __future__ import annotations

        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            import torch
            from torch.utils.data import DataLoader


        def evaluate(model: torch.nn.Module, test_loader: DataLoader) -> float:
            model.eval()
            correct = 0
            for x, y in test_loader:
                correct += (model(x).argmax(1) == y).sum().item()
            return correct / len(test_loader.dataset)
    """)
    assert check("--fix", "--unsafe-fixes", "typed.py", capsys=capsys)[0] == 0
    text = path.read_text()
    assert text.startswith("from __future__ import annotations\n\nimport torch\nfrom typing import TYPE_CHECKING\n")
    assert "    with torch.no_grad():\n        for x, y in test_loader:\n" in text
    tree = ast.parse(text)
    runtime = [n for n in tree.body if isinstance(n, ast.Import)]
    assert [a.name for n in runtime for a in n.names] == ["torch"]


def test_tl101_leaves_policy_gradient_rollouts_alone(project, capsys):
    # The rollouts keep what they compute for a backward() that comes later: a no_grad
    # around them would leave that backward nothing to differentiate.
    sources = {name: (ROOT / "tests" / "corpus" / "negatives" / name).read_text() for name in (
        "policy_gradient_probs_stored_through_method.py", "policy_gradient_log_probs_in_memory.py")}
    for name, source in sources.items():
        write(project, name, source)
    status, out, _ = check("--fix", "--unsafe-fixes", "--select", "TL101", *sources, capsys=capsys)
    assert status == 0 and "TL101" not in out
    for name, source in sources.items():
        assert (project / name).read_text() == source


def test_tl201_inserts_zero_grad_for_each_optimizer(project, capsys):
    path = write(project, "gan.py", """\
        import torch

        def train(gen, disc, loader, opt_g, opt_d):
            for x in loader:  # one batch
                # discriminator
                loss_d = disc(x).mean()
                loss_d.backward()
                opt_d.step()
                loss_g = -disc(gen(x)).mean()
                loss_g.backward()
                opt_g.step()
    """)
    assert check("--fix", "--unsafe-fixes", "gan.py", capsys=capsys)[0] == 0
    assert ("    for x in loader:  # one batch\n        opt_d.zero_grad()\n        opt_g.zero_grad()\n"
            "        # discriminator\n") in path.read_text()


def test_tl301_detaches_what_is_stored_or_accumulated(project, capsys):
    path = write(project, "acc.py", """\
        import torch

        def train(model, loader, optimizer, criterion):
            history, preds = {}, []
            total = 0.0
            for step, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                out = model(x)
                loss = criterion(out, y)
                loss.backward()
                optimizer.step()
                total += loss * 2
                history[step] = loss
                preds.append(out)
            return history, preds, total
    """)
    assert check("--fix", "--unsafe-fixes", "acc.py", capsys=capsys)[0] == 0
    text = path.read_text()
    assert "total += (loss * 2).detach()" in text
    assert "history[step] = loss.detach()" in text
    assert "preds.append(out.detach())" in text


def test_tl302_drops_retain_graph_and_tidies_commas(project, capsys):
    path = write(project, "rg.py", """\
        import torch

        def train(model, loader, optimizer, params):
            for x in loader:
                optimizer.zero_grad()
                loss = model(x).sum()
                grads = torch.autograd.grad(
                    loss,
                    params,
                    retain_graph=True,
                )
                optimizer.step()
            for x in loader:
                optimizer.zero_grad()
                torch.autograd.grad(model(x).sum(), params, retain_graph=True)
                optimizer.step()
    """)
    assert check("--fix", "--unsafe-fixes", "rg.py", capsys=capsys)[0] == 0
    text = path.read_text()
    assert "grads = torch.autograd.grad(\n            loss,\n            params,\n        )\n" in text
    assert "torch.autograd.grad(model(x).sum(), params)\n" in text


def test_tl302_carried_state_gets_no_fix(project, capsys):
    path = write(project, "rnn.py", """\
        import torch

        def train(rnn, loader, optimizer, h):
            for x, y in loader:
                optimizer.zero_grad()
                out, h = rnn(x, h)
                loss = (out - y).pow(2).mean()
                loss.backward(retain_graph=True)
                optimizer.step()
    """)
    before = path.read_bytes()
    status, out, _ = check("--fix", "--unsafe-fixes", "--select", "TL302", "rnn.py", capsys=capsys)
    assert status == 1 and "TL302" in out and path.read_bytes() == before


def test_fixes_in_one_loop_all_apply_over_several_passes(project, capsys):
    path = write(project, "all.py", """\
        import torch

        def train(model, loader, optimizer, criterion):
            losses = []
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward(retain_graph=True)
                optimizer.step()
                losses.append(loss)
            return losses
    """)
    status, out, _ = check("--fix", "--unsafe-fixes", "all.py", capsys=capsys)
    assert status == 0 and out.splitlines()[-1] == "Found 3 findings (3 fixed, 0 remaining)."
    text = path.read_text()
    assert "optimizer.zero_grad()" in text and "retain_graph" not in text and "losses.append(loss.detach())" in text
    before = path.read_bytes()
    assert check("--fix", "--unsafe-fixes", "all.py", capsys=capsys)[:2] == (0, "All checks passed!\n")
    assert path.read_bytes() == before


# -- formatting, encodings, files -------------------------------------------

ODD = """\
#!/usr/bin/env python
# -*- coding: utf-8 -*-
\"\"\"Módulo de entrenamiento.\"\"\"
import torch   # aligned   comment
CONFIG = {  'lr' : 0.1 ,   # odd spacing
            'steps':3,}


def helper( a,b ) :
    return a+b   # keep


def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)   # stored
    return losses
"""


def test_formatting_and_comments_elsewhere_are_untouched(project, capsys):
    path = write(project, "odd.py", ODD)
    assert check("--fix", "--unsafe-fixes", "odd.py", capsys=capsys)[0] == 0
    assert path.read_text(encoding="utf-8") == ODD.replace(
        "losses.append(loss)   # stored", "losses.append(loss.detach())   # stored")


def test_crlf_and_bom_are_preserved(project, capsys):
    path = project / "win.py"
    path.write_bytes(b"\xef\xbb\xbf" + ODD.replace("\n", "\r\n").encode("utf-8"))
    assert check("--fix", "--unsafe-fixes", "win.py", capsys=capsys)[0] == 0
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert data.count(b"\n") == data.count(b"\r\n") == ODD.count("\n")
    assert b"losses.append(loss.detach())   # stored\r\n" in data


def test_crlf_in_inserted_lines(project, capsys):
    path = project / "win.py"
    path.write_bytes(textwrap.dedent(EVAL).replace("\n", "\r\n").encode())
    assert check("--fix", "--unsafe-fixes", "win.py", capsys=capsys)[0] == 0
    data = path.read_bytes()
    assert b"with T.no_grad():\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


def test_coding_declaration_is_honoured(project, capsys):
    source = ODD.replace("utf-8", "latin-1")
    path = project / "latin.py"
    path.write_bytes(source.encode("latin-1"))
    assert check("--fix", "--unsafe-fixes", "latin.py", capsys=capsys)[0] == 0
    assert path.read_bytes() == source.replace(
        "losses.append(loss)", "losses.append(loss.detach())").encode("latin-1")


def test_permissions_are_kept(project, capsys):
    path = write(project, "perm.py", ODD)
    path.chmod(0o750)
    assert check("--fix", "--unsafe-fixes", "perm.py", capsys=capsys)[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert "loss.detach()" in path.read_text(encoding="utf-8")
    assert not [p for p in project.iterdir() if p.name.startswith(".torchlint-")]  # no temp file left


def test_read_only_file_is_reported_and_the_others_are_fixed(project, capsys):
    locked = write(project, "locked.py", ODD)
    other = write(project, "other.py", ODD)
    locked.chmod(0o444)
    try:
        status, out, err = check("--fix", "--unsafe-fixes", "locked.py", "other.py", capsys=capsys)
        assert status == 1, err  # the read-only file's finding remains; the run itself did its job
        assert "locked.py: cannot write fixed file" in err
        assert locked.read_text(encoding="utf-8") == ODD
        assert "loss.detach()" in other.read_text(encoding="utf-8")
        assert out.splitlines()[-1] == "Found 2 findings (1 fixed, 1 remaining)."
        assert out.startswith("locked.py:20:9: TL301")
    finally:
        locked.chmod(0o644)


def test_noqa_suppressed_findings_are_not_fixed(project, capsys):
    source = ODD.replace("# stored", "# noqa: TL301")
    path = write(project, "quiet.py", source)
    assert check("--fix", "--unsafe-fixes", "quiet.py", capsys=capsys)[:2] == (0, "All checks passed!\n")
    assert path.read_text(encoding="utf-8") == source


def test_nothing_to_fix_writes_nothing(project, capsys):
    path = write(project, "clean.py", "import torch\n\nx = torch.zeros(3)\n")
    os.utime(path, (1_000_000, 1_000_000))
    assert check("--fix", "clean.py", capsys=capsys)[:2] == (0, "All checks passed!\n")
    assert path.stat().st_mtime == 1_000_000


# -- safety gating, --diff, exit codes ---------------------------------------

def test_unsafe_fixes_need_the_flag(project, capsys):
    path = write(project, "odd.py", ODD)
    status, out, _ = check("--fix", "odd.py", capsys=capsys)
    assert status == 1 and path.read_text(encoding="utf-8") == ODD
    assert out.splitlines()[-2:] == ["Found 1 finding in 1 file.", "1 fix available with --unsafe-fixes."]
    status, out, _ = check("--fix", "--unsafe-fixes", "odd.py", capsys=capsys)
    assert status == 0 and out.splitlines() == ["Found 1 finding (1 fixed, 0 remaining)."]


def test_safe_fixes_apply_with_fix_alone(project, capsys, monkeypatch):
    monkeypatch.setattr(RULES_BY_CODE["TL301"], "fix_safety", "safe")
    path = write(project, "odd.py", ODD)
    status, out, _ = check("--fix", "odd.py", capsys=capsys)
    assert status == 0 and "loss.detach()" in path.read_text(encoding="utf-8")


def test_json_reports_fix_availability(project, capsys):
    write(project, "odd.py", ODD)
    import json

    status, out, _ = check("--output-format", "json", "odd.py", capsys=capsys)
    [record] = json.loads(out)
    assert record["fix"] == {"safety": "unsafe", "description": "store `loss.detach()` instead of `loss`"}


def test_diff_writes_nothing_and_shows_a_unified_diff(project, capsys):
    path = write(project, "odd.py", ODD)
    os.utime(path, (1_000_000, 1_000_000))
    status, out, err = check("--diff", "--unsafe-fixes", "odd.py", capsys=capsys)
    assert status == 1
    assert path.read_text(encoding="utf-8") == ODD and path.stat().st_mtime == 1_000_000
    assert out.startswith("--- a/odd.py\n+++ b/odd.py\n@@ ")
    assert "-        losses.append(loss)   # stored\n+        losses.append(loss.detach())   # stored\n" in out
    assert "Would apply 1 fix in 1 file." in err
    # Applying the diff gives what --fix writes.
    if shutil.which("patch"):
        copy = write(project, "copy.py", ODD)
        subprocess.run(["patch", "-s", str(copy)], input=out, text=True, check=True)
        assert check("--fix", "--unsafe-fixes", "odd.py", capsys=capsys)[0] == 0
        assert copy.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_diff_without_changes_exits_zero(project, capsys):
    write(project, "odd.py", ODD)
    status, out, err = check("--diff", "odd.py", capsys=capsys)  # only an unsafe fix exists
    assert (status, out) == (0, "")
    assert "1 fix available with --unsafe-fixes." in err


def test_exit_code_reflects_what_remains(project, capsys):
    # TL202 (zero_grad between backward and step) has no fix; TL302's does.
    path = write(project, "mixed.py", """\
        import torch

        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x).sum()
                loss.backward(retain_graph=True)
                optimizer.zero_grad()
                optimizer.step()
    """)
    status, out, _ = check("--fix", "--unsafe-fixes", "mixed.py", capsys=capsys)
    assert status == 1
    assert out.splitlines()[-1] == "Found 2 findings (1 fixed, 1 remaining)."
    assert "TL202" in out and "retain_graph" not in path.read_text()
    assert check("--fix", "--unsafe-fixes", "--exit-zero", "mixed.py", capsys=capsys)[0] == 0


def test_cache_sees_the_fixed_content(project, capsys):
    write(project, "odd.py", ODD)
    assert main(["check", "odd.py"]) == 1  # fills the cache
    assert main(["check", "--fix", "--unsafe-fixes", "odd.py"]) == 0
    assert main(["check", "odd.py"]) == 0
    capsys.readouterr()


def test_fix_through_the_real_command_and_stdin(project):
    proc = run_cli("check", "--fix", "--unsafe-fixes", "--stdin-filename", "odd.py", "-", cwd=project, stdin=ODD)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ODD.replace("losses.append(loss)", "losses.append(loss.detach())")
    proc = run_cli("check", "--fix", "--stdin-filename", "odd.py", "-", cwd=project, stdin=ODD)
    assert proc.returncode == 1 and proc.stdout == ODD and "TL301" in proc.stderr


# -- the fixer refuses bad fixes ---------------------------------------------

class _Breaks(Rule):
    """Test rule: flags ``x = 1`` and offers a fix chosen by the test."""

    code = "TL999"
    name = "test-rule"
    message = "x is one; make it two"
    fix_safety = "safe"
    make = staticmethod(lambda node: None)

    def check(self, model):
        for a in model.assignments:
            if isinstance(a.node, cst.Assign) and isinstance(a.value, cst.Integer) and a.value.value == "1":
                yield self.report(a.node, fix=Fix("change", ((a.value, type(self).make(a.value)),)))


@pytest.mark.parametrize("make, reason", [
    (lambda node: cst.Integer("1"), "still reported"),  # does not remove the hazard
    (lambda node: cst.Name("lambda"), "does not parse"),  # breaks the code
])
def test_a_fix_that_fails_verification_is_dropped_and_reported(make, reason, monkeypatch):
    monkeypatch.setattr(_Breaks, "make", staticmethod(make))
    outcome = fix_text("x = 1\ny = 3\n", "t.py", LintRequest.for_rules([_Breaks]), {"safe"})
    assert outcome.text is None
    assert [(code, line) for code, line, _ in outcome.rejected] == [("TL999", 1)]
    assert reason in outcome.rejected[0][2]


def test_a_fix_that_adds_a_finding_is_dropped(monkeypatch):
    monkeypatch.setattr(_Breaks, "make", staticmethod(lambda node: cst.Integer("2")))

    class Twos(Rule):  # reports what the fix writes
        code = "TL998"
        name = "twos"
        message = "x is two; no"

        def check(self, model):
            for a in model.assignments:
                if isinstance(a.value, cst.Integer) and a.value.value == "2":
                    yield self.report(a.node)

    outcome = fix_text("x = 1\n", "t.py", LintRequest.for_rules([_Breaks, Twos]), {"safe"})
    assert outcome.text is None and "TL998" in outcome.rejected[0][2]
    outcome = fix_text("x = 1\n", "t.py", LintRequest.for_rules([_Breaks]), {"safe"})
    assert outcome.text == "x = 2\n"


def test_every_rule_with_a_fix_documents_its_safety():
    from torchlint.docs import render

    for rule in ALL_RULES:
        if rule.fix_safety == "none":
            continue
        page = render(rule)
        section = page.split("## Fix safety", 1)[1].split("\n## ", 1)[0]
        assert f"**{rule.fix_safety}**" in section
        parts = [part for part in section.strip().split("\n\n") if part.strip()]
        assert len(parts) >= 2, f"{rule.code}: say what the fix does and why it is {rule.fix_safety}"


# -- the pre-commit hook ------------------------------------------------------

@pytest.mark.timeout(1800)  # its subprocess alone is allowed 900 s; pyproject.toml allows a test 600
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_precommit_fix_hook(tmp_path):
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    safe = [r.code for r in ALL_RULES if r.fix_safety == "safe" and r.default]
    files = {"train.py": ODD}  # TL301: an unsafe fix, which the hook leaves alone
    for code in safe:
        try:
            files[f"safe_{code}.py"] = (fixture(code) / "bad.py").read_text(encoding="utf-8")
        except ValueError:
            continue
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", *files], cwd=repo, check=True, env=env)

    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "torchlint-fix", "--all-files"],
        cwd=repo, capture_output=True, text=True, env=env, timeout=900,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:20:9: TL301" in proc.stdout
    assert "available with --unsafe-fixes" in proc.stdout
    assert (repo / "train.py").read_text(encoding="utf-8") == ODD
    for name in files:
        if name.startswith("safe_"):
            code = name[len("safe_"):-3]
            assert (repo / name).read_text(encoding="utf-8") != files[name], name
            assert code not in codes_in(repo / name)
            assert "files were modified by this hook" in proc.stdout


def test_fix_source_for_the_language_server():
    from torchlint.fixer import fix_source
    from torchlint.rules import DEFAULT_CODES

    DEFAULTS = LintRequest.of(DEFAULT_CODES)  # noqa: N806 - what a file with no config is linted for
    fixed = ODD.replace("losses.append(loss)", "losses.append(loss.detach())")
    assert fix_source(ODD, "odd.py", DEFAULTS, ["TL301"], unsafe=True) == fixed
    assert fix_source(ODD, "odd.py", DEFAULTS, ["TL301"], unsafe=False) == ODD  # the fix is unsafe
    assert fix_source(ODD, "odd.py", DEFAULTS, ["TL302"], unsafe=True) == ODD  # only the codes asked for


def test_a_dotted_expression_is_the_one_libcst_parses():
    """``edits.dotted_expression`` builds without a parse what ``parse_expression`` gives:
    the same nodes (the fixes that wrap code in ``with torch.no_grad():`` print the same)."""
    from torchlint.edits import dotted_expression

    for name in ("no_grad", "torch.no_grad", "th.autograd.no_grad", "torch.inference_mode"):
        built = dotted_expression(name)
        assert built.deep_equals(cst.parse_expression(name))
        assert cst.Module(()).code_for_node(cst.Call(func=built)) == f"{name}()"
