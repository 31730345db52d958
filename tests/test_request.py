"""One request per file: settings resolved once, codes turned into rules in one place, and the fix
loop's last lint reused instead of linting a written file again (issue 30, point 6)."""
from __future__ import annotations

import ast
import shutil

import pytest

from conftest import FIXTURES, ROOT
from torchlint import config as config_mod
from torchlint import runner
from torchlint.cli import main
from torchlint.request import LintRequest, rules_for
from torchlint.rules import ALL_RULES, DEFAULT_CODES

SOURCES = ROOT / "src" / "torchlint"


@pytest.fixture
def project(tmp_path):
    for code in ("TL301", "TL402", "TL501"):
        [folder] = [p for p in FIXTURES.iterdir() if p.name.startswith(code + "_")]
        shutil.copy(folder / "bad.py", tmp_path / f"{code.lower()}.py")
    (tmp_path / "pyproject.toml").write_text("[tool.torchlint]\n", encoding="utf-8")
    return tmp_path


def test_check_and_fix_resolve_each_file_once(project, monkeypatch, capsys):
    resolved = []
    real = config_mod.Settings.resolve

    def counting(self, path):
        resolved.append(path)
        return real(self, path)

    monkeypatch.setattr(config_mod.Settings, "resolve", counting)
    files = sorted(str(p) for p in project.glob("*.py"))
    assert main(["check", "--fix", "--unsafe-fixes", "--no-cache", "--jobs", "1", *files]) == 0  # all fixed
    assert "fixed, 0 remaining" in capsys.readouterr().out
    assert sorted(resolved) == files  # once each: the check and the fix use the same request


def test_a_fixed_file_is_not_linted_again(project, monkeypatch, capsys):
    from torchlint import fix_files

    linted = []
    real = runner.lint_data

    def counting(path, data, request, **options):
        linted.append(path)
        return real(path, data, request, **options)

    monkeypatch.setattr(runner, "lint_data", counting)
    path = str(project / "tl402.py")
    request = config_mod.Settings().resolve(path).request
    results = runner.check_files([path], lambda _: request, jobs=1)
    assert linted == [path]  # the check
    run = fix_files.fix_files([path], results, lambda _: request, unsafe=True, write=True)
    assert linted == [path] and run.changed  # written, and not linted again
    assert run.results[0].diagnostics == real(path, (project / "tl402.py").read_bytes(), request).diagnostics


def test_the_fix_loops_last_lint_is_what_the_check_reports_on_the_fixed_text():
    from torchlint.fixer import fix_text

    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        source = (folder / "bad.py").read_text(encoding="utf-8")
        request = LintRequest.of(rule.code for rule in ALL_RULES)
        outcome = fix_text(source, "bad.py", request, {"safe", "unsafe"})
        if outcome.text is None:
            continue
        assert outcome.remaining.diagnostics == runner.lint_data("bad.py", outcome.text, request).diagnostics, \
            folder.name


def test_codes_become_rules_in_one_place():
    assert rules_for(frozenset(DEFAULT_CODES)) == tuple(r for r in ALL_RULES if r.default)
    assert rules_for(frozenset({"TL301", "TL010", "TL001", "TL999"})) == tuple(
        r for r in ALL_RULES if r.code == "TL301")
    # nowhere else does the package pick rules out of the catalogue by their codes
    picking = []
    for path in SOURCES.rglob("*.py"):
        if path.name in ("request.py", "docs.py") or "rules" in path.parts[-2:-1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # ``[rule for rule in ALL_RULES if rule.code in codes]`` and its spellings
            if isinstance(node, ast.comprehension) and any(
                    isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute)
                    and test.left.attr == "code" and any(isinstance(op, ast.In) for op in test.ops)
                    for test in node.ifs):
                picking.append(f"{path.relative_to(SOURCES)}:{node.iter.lineno}")
    assert picking == []


def test_a_request_knows_what_follows_from_its_codes():
    request = LintRequest.of({"TL301", "TL010"})
    assert request.unused_noqa and request.engine_options == {"noqa_checks": frozenset({"TL010"})}
    assert [r.code for r in request.rules] == ["TL301"]
    quiet = request.with_codes({"TL301"})
    assert not quiet.unused_noqa and quiet.engine_options == {}
