"""How selective each rule's gates are: the files its text gate admits, and those its tree gate keeps.

    python bench/gates.py [TREE] [--json OUT] [--compare OLD.json]
    python bench/gates.py [TREE] --costs

For every ``.py`` file under TREE (default: the benchmark tree, ``bench.py``'s
``tree-full``), every default rule (``--all``: every rule) is asked as the engine asks it: its text gate on the
source, then, on the code without docstrings, its text gate again and its tree gate
(``engine._tree_gated``, unit-test and other-framework shortcut included). The table
gives, per rule, the files each admits, and the files that reach libcst (some rule
still wants them). ``--compare`` prints a second recording's counts beside these: run
it once with ``PYTHONPATH`` on an older checkout's ``src`` and once on this one to see
whether a change to the gates lets more files through (issue 30: "as selective as
today"). Counts only; speed is ``bench.py``'s.

``--costs`` measures what decides ``Rule.asked_when_parsed``. Once one rule's tree question
admits a file it is parsed anyway, and another rule's question only spares that rule's
check: per rule, the time its question takes on files parsed anyway, and the time its
check then takes where its question says no (every admitted rule's check run first, so
that facts rules share are paid already), with notebooks (their joined code cells) too.
A rule whose check costs more there than its question is one the engine should still ask.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import sys
from collections import Counter
from pathlib import Path

CACHE = Path(os.environ.get("TORCHLINT_BENCH_CACHE", Path.home() / ".cache" / "torchlint-bench"))


def count(tree: Path, every_rule: bool = False) -> dict:
    from torchlint.engine import _tree_gated
    from torchlint.rules import ALL_RULES

    rules = [rule for rule in ALL_RULES if every_rule or rule.default]

    text, both = Counter(), Counter()
    files = parsed = 0
    for path in sorted(tree.rglob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            module = ast.parse(source)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        files += 1
        admitted = [rule for rule in rules if rule.may_apply(source)]
        text.update(rule.code for rule in admitted)
        kept = _tree_gated(admitted, module, source, str(path), every_question=True) if admitted else []
        both.update(rule.code for rule in kept)
        parsed += bool(kept)
    return {"files": files, "reach_libcst": parsed, "text": dict(text), "tree": dict(both)}


def _sources(tree: Path):
    """(path, code, Python's tree of it) of every ``.py`` file and notebook under ``tree`` that parses."""
    from torchlint import notebook

    for path in sorted(p for p in tree.rglob("*") if p.suffix in (".py", ".ipynb")):
        try:
            data = path.read_bytes()
            code = notebook.module_source(notebook.code_cells(notebook.load(data))) \
                if path.suffix == ".ipynb" else data.decode("utf-8")
            module = ast.parse(code)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # a broken notebook is a ValueError too
        yield path, code, module


def costs(tree: Path, every_rule: bool = False) -> str:
    import time

    import libcst

    from torchlint.cst_parse import parse_source
    from torchlint.model import FileModel
    from torchlint.rules import ALL_RULES
    from torchlint.tree_gate import TreeIndex

    rules = [rule for rule in ALL_RULES if every_rule or rule.default]
    question, check, declined = Counter(), Counter(), Counter()
    for path, code, module in _sources(tree):
        index = TreeIndex(module, code, None, str(path))
        text = index.code_text()
        answers, spent = {}, {}
        for rule in rules:
            if rule.may_apply(text):
                start = time.perf_counter()
                answers[rule] = rule.needs_tree(index)
                spent[rule] = time.perf_counter() - start
        if not any(answers.values()):
            continue
        question.update(spent)
        try:
            model = FileModel(parse_source(code), str(path))
        except (libcst.ParserSyntaxError, RecursionError):  # libcst refuses what Python takes: no check runs
            continue
        for rule in rules:
            if answers.get(rule):
                list(rule().check(model))
        for rule, yes in answers.items():
            if not yes:
                start = time.perf_counter()
                list(rule().check(model))
                check[rule] += time.perf_counter() - start
                declined[rule] += 1
    rows = ["| rule | question, parsed files (ms) | check where it says no (ms, files) | asked when parsed |",
            "|---|---:|---:|---|"]
    for rule in sorted(question, key=lambda r: check[r] - question[r]):
        rows.append(f"| {rule.code} | {question[rule] * 1e3:.1f} | {check[rule] * 1e3:.1f} ({declined[rule]}) "
                    f"| {'yes' if rule.asked_when_parsed else ''} |")
    return "\n".join(rows)


def table(new: dict, old: dict = None) -> str:
    codes = sorted(set(new["text"]) | set(new["tree"]) | set((old or {}).get("text", {})))
    rows = ["| rule | text gate | both gates |" + (" before (text / both) |" if old else ""),
            "|---|---:|---:|" + ("---:|" if old else "")]
    for code in codes:
        row = f"| {code} | {new['text'].get(code, 0)} | {new['tree'].get(code, 0)} |"
        if old:
            before = (old["text"].get(code, 0), old["tree"].get(code, 0))
            mark = "" if before == (new["text"].get(code, 0), new["tree"].get(code, 0)) else " *"
            row += f" {before[0]} / {before[1]}{mark} |"
        rows.append(row)
    head = f"{new['files']} files; {new['reach_libcst']} reach libcst"
    if old:
        head += f" ({old['reach_libcst']} before)"
    return head + "\n\n" + "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree", nargs="?", type=Path, default=CACHE / "tree-full")
    parser.add_argument("--all", action="store_true", help="every rule, opt-in ones too (default: the default rules)")
    parser.add_argument("--json", type=Path, help="write the counts here")
    parser.add_argument("--compare", type=Path, help="counts recorded before (--json of an earlier run)")
    parser.add_argument("--costs", action="store_true", help="per rule: its tree question against its check, "
                        "on files parsed anyway (what Rule.asked_when_parsed follows)")
    args = parser.parse_args(argv)
    if not args.tree.is_dir():
        print(f"no tree at {args.tree}: run bench/bench.py first, or name a folder", file=sys.stderr)
        return 2
    if args.costs:
        print(costs(args.tree, args.all))
        return 0
    counts = count(args.tree, args.all)
    if args.json:
        args.json.write_text(json.dumps(counts, indent=1, sort_keys=True))
    old = json.loads(args.compare.read_text()) if args.compare else None
    print(table(counts, old))
    return 0


if __name__ == "__main__":
    sys.exit(main())
