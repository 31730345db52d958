"""How selective each rule's gates are: the files its text gate admits, and those its tree gate keeps.

    python bench/gates.py [TREE] [--json OUT] [--compare OLD.json]

For every ``.py`` file under TREE (default: the benchmark tree, ``bench.py``'s
``tree-full``), every default rule (``--all``: every rule) is asked as the engine asks it: its text gate on the
source, then, on the code without docstrings, its text gate again and its tree gate
(``engine._tree_gated``, unit-test and other-framework shortcut included). The table
gives, per rule, the files each admits, and the files that reach libcst (some rule
still wants them). ``--compare`` prints a second recording's counts beside these: run
it once with ``PYTHONPATH`` on an older checkout's ``src`` and once on this one to see
whether a change to the gates lets more files through (issue 30: "as selective as
today"). Counts only; speed is ``bench.py``'s.
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
        kept = _tree_gated(admitted, module, source, str(path)) if admitted else []
        both.update(rule.code for rule in kept)
        parsed += bool(kept)
    return {"files": files, "reach_libcst": parsed, "text": dict(text), "tree": dict(both)}


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
    args = parser.parse_args(argv)
    if not args.tree.is_dir():
        print(f"no tree at {args.tree}: run bench/bench.py first, or name a folder", file=sys.stderr)
        return 2
    counts = count(args.tree, args.all)
    if args.json:
        args.json.write_text(json.dumps(counts, indent=1, sort_keys=True))
    old = json.loads(args.compare.read_text()) if args.compare else None
    print(table(counts, old))
    return 0


if __name__ == "__main__":
    sys.exit(main())
