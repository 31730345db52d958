"""Sentences the tool could contradict, checked where it is cheap: the flags docs/cli.md
names, the codes the docs name, the README's count of opt-in rules.

(The generated docs have their own checks in tests/test_docs.py.)
"""
from __future__ import annotations

import re

from conftest import ROOT, run_cli
from torchlint.codes import STATUS_CODES
from torchlint.rules import ALL_RULES

DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


def _help_texts() -> str:
    """``--help`` of torchlint and of each of its commands, as a user reads them."""
    return "".join(run_cli(*command, "--help").stdout for command in ((), ("check",), ("rule",), ("clean",)))


def _documented_flags(text: str) -> set:
    """Options in inline code: an option cell (`--select CODES`) or an example command
    (`torchlint check --fix`, cut at a pipe: `... | less -R` is another program's)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    flags = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.replace("\\|", "|")
        if span.startswith("torchlint "):
            span = span.split("|")[0]
        elif not span.startswith("-"):
            continue
        flags |= set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", span))
    return flags


def test_every_flag_in_the_cli_docs_exists():
    documented = _documented_flags((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))
    offered = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", _help_texts()))
    assert len(documented) > 30  # the extraction found the option tables
    assert documented - offered == set()


def test_every_code_the_docs_name_exists():
    known = {rule.code for rule in ALL_RULES} | set(STATUS_CODES)
    unknown = {f"{doc.relative_to(ROOT)}: {code}" for doc in DOCS
               for code in re.findall(r"\bTL\d{3}\b", doc.read_text(encoding="utf-8")) if code not in known}
    assert unknown == set()


def test_the_readme_counts_the_opt_in_rules_of_the_registry():
    """It said "two" while seven rules were opt-in."""
    opt_in = [rule.code for rule in ALL_RULES if not rule.default]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"Every rule but the (\w+) marked opt-in is on by default", readme)
    assert said is not None, "the README no longer says how many rules are opt-in"
    assert said.group(1) == NUMBER_WORDS[len(opt_in)], opt_in
    assert readme.count("| opt-in: ") == len(opt_in)  # the rule table marks the same ones
