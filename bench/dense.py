#!/usr/bin/env python3
"""Issue 30's speed target on dense training code, measured: one file's in-process lint
takes at most 1.3x the libcst parse of the same file.

    python bench/dense.py [--quick] [--training DIR] [--json OUT] [--repeat N] [--floor] [--calls]

For each input, in this one process and run: the best-of-N wall time of
``libcst.parse_module(text)`` with libcst's node classes as shipped (``cst_nodes.as_shipped``:
torchlint's own parse builds nodes its quicker way) and of torchlint's in-process lint of the same file with
the default rules, as bench/bench.py's ``_INPROC`` does it (``lint_source(data, path,
rules)``, warmed once, ``gc.collect()`` before each timing, the collector left on:
``lint_source`` manages it, and runs big sources on its big-stack thread, which is part
of the cost). The parse is timed a second time with the collector off, as
``lint_source`` runs: on big files the collector alone slows libcst's parse by 10-20 %.
N is 5 (``--repeat``), 1 for files over 5,000 lines. The lint includes what torchlint's
text and tree gates save: a file they turn down is never parsed.

Inputs: generated training files of 1,000 and 10,000 lines (bench.py's
``generate_file``; ``--quick``: 1,000 only) and every file of the training corpus
(``bench/training/corpus.json``) under ``--training`` (default
``~/.cache/torchlint-bench/training``, which ``bench/training_corpus.py materialise``
writes; only the files the corpus lists, not the distributed corpus's that share the
folder; ``--quick``: at most 100 of them, every k-th of the sorted paths). A notebook is
linted as the CLI does it (``notebook.lint_notebook``, JSON included) and its parse is that of the joined code
cells torchlint reads (``notebook.module_source``). For the training files: the sums of
parse and lint times and their ratio, the median per-file ratio and the ten files with
the highest ratio (of 20 lines or more). A file libcst cannot parse is counted and
skipped. Always exits 0: this is a measurement, not a test.

``--floor`` also times each lint with every rule's check emptied (the rules still gate, so the
same files are parsed and the same model is built; no analysis is asked): the ratio that
decoding, the gates, both parses and the model's build take before any rule looks, and so
how much of the ratio the analyses and checks add.

``--calls`` times nothing: it counts the Python function calls of one warm lint of every
training file (cProfile's count), the interpreted work of the lint. On a machine whose
timings wander by more than a change saves, two commits compare by it (the other one's
``src`` first on ``PYTHONPATH``).
"""
from __future__ import annotations

import argparse
import cProfile
import contextlib
import datetime
import gc
import json
import platform
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import libcst

import bench  # bench/bench.py: definitions only at import, its main() runs as a script
import training_corpus  # the corpus's own list of files, not whatever the folder holds
from torchlint import cst_nodes, engine, notebook
from torchlint.engine import lint_source
from torchlint.rules import ALL_RULES

RULES = [r for r in ALL_RULES if getattr(r, "default", True)]
TARGET = 1.3
BIG_LINES = 5_000
TOP_MIN_LINES = 20  # an empty notebook parses in 0.04 ms: its ratio says nothing


def best_of(fn, n: int, collector: bool = True):
    best, out = None, None
    for _ in range(n):
        gc.collect()
        if not collector:
            gc.disable()
        t = time.perf_counter()
        out = fn()
        t = time.perf_counter() - t
        gc.enable()
        best = t if best is None else min(best, t)
    return best, out


def prepared(path: str, data: bytes):
    """``(text libcst parses, the lint of the file)``; raises ValueError when it is skipped."""
    if path.endswith(".ipynb"):
        try:
            nb = notebook.load(data)
            lang = notebook.language(nb)
            if lang is not None and lang.lower() not in ("python", "python3", "ipython", "ipython3"):
                raise ValueError(f"notebook language {lang!r}")
            text = notebook.module_source(notebook.code_cells(nb))
        except notebook.NotebookError as exc:
            raise ValueError(f"notebook: {exc}") from None
        lint = lambda: notebook.lint_notebook(data, path, RULES)
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"not UTF-8: {exc.reason}") from None
        lint = lambda: lint_source(data, path, RULES)
    return text, lint


@contextlib.contextmanager
def checks_emptied():
    """Every default rule's ``check`` finds nothing and asks nothing while in it (``--floor``)."""
    own = [(rule, rule.__dict__.get("check")) for rule in RULES]
    for rule in RULES:
        rule.check = _finds_nothing
    try:
        yield
    finally:
        for rule, check in own:
            if check is None:
                del rule.check  # it inherited its check
            else:
                rule.check = check


def _finds_nothing(self, file_model):
    return iter(())


def measure(path: str, data: bytes, repeat: int, floor: bool = False) -> dict:
    """One file: its libcst parse and its lint, timed; raises ValueError when it is skipped.
    ``floor``: also its lint with the rules' checks emptied (``checks_emptied``)."""
    text, lint = prepared(path, data)
    lines = len(text.splitlines())
    n = 1 if lines > BIG_LINES else repeat
    try:
        with cst_nodes.as_shipped():
            parse_s, _ = best_of(lambda: libcst.parse_module(text), n)
            parse_off_s, _ = best_of(lambda: libcst.parse_module(text), n, collector=False)
    except Exception as exc:  # noqa: BLE001 - a measurement: say why and go on
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise ValueError(f"libcst cannot parse it: {type(exc).__name__}: {first}") from None
    lint()  # warm: imports, caches
    lint_s, result = best_of(lint, n)
    row = {"lines": lines, "repeat": n, "parse_ms": parse_s * 1e3, "parse_gc_off_ms": parse_off_s * 1e3,
           "lint_ms": lint_s * 1e3, "ratio": lint_s / parse_s, "ratio_gc_off": lint_s / parse_off_s,
           "diagnostics": len(result.diagnostics)}
    if floor:
        with checks_emptied():
            lint()
            floor_s, _ = best_of(lint, n)
        row.update(floor_ms=floor_s * 1e3, floor_ratio=floor_s / parse_s)
    return row


def count_calls(files: list) -> dict:
    """The Python function calls (cProfile's count) of one warm in-process lint of every file
    libcst parses: the interpreted work of the lint, which two commits can compare where the
    machine's timings wander by more than the change (libcst's parse shows only as the node
    constructors it calls back into Python)."""
    lints = []
    for f in files:
        try:
            text, lint = prepared(str(f), f.read_bytes())
            libcst.parse_module(text)
        except Exception:  # noqa: BLE001 - skipped, as the timings skip it
            continue
        lints.append(lint)
    for lint in lints:
        lint()  # warm: imports, caches
    # cProfile sees one thread: a big file's lint, which lint_source hands to its big-stack
    # thread, runs in place here (the training files need no more than a raised limit)
    on_big_stack, limit = engine._on_big_stack, sys.getrecursionlimit()
    engine._on_big_stack = lambda fn, *a, **k: fn(*a, **k)
    sys.setrecursionlimit(max(limit, 30_000))
    profile = cProfile.Profile()
    try:
        profile.enable()
        for lint in lints:
            lint()
        profile.disable()
    finally:
        engine._on_big_stack = on_big_stack
        sys.setrecursionlimit(limit)
    stats = pstats.Stats(profile)
    return {"files": len(lints), "calls": stats.total_calls, "primitive_calls": stats.prim_calls}


def verdict(label: str, ratio: float) -> str:
    return f"{label}: lint {ratio:.2f}x the libcst parse (target <= {TARGET}x)"


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--training", type=Path, default=Path("~/.cache/torchlint-bench/training"))
    ap.add_argument("--json", type=Path, metavar="OUT")
    ap.add_argument("--quick", action="store_true", help="1,000 generated lines, at most 100 training files")
    ap.add_argument("--repeat", type=int, default=5, help="best of N (files over 5,000 lines: 1)")
    ap.add_argument("--floor", action="store_true",
                    help="also time each lint with the rules' checks emptied: the ratio before any analysis")
    ap.add_argument("--calls", action="store_true",
                    help="count the Python calls of one lint of the training files instead of timing")
    args = ap.parse_args()
    commit, dirty = git("rev-parse", "--short", "HEAD"), bool(git("status", "--porcelain", "--", "src"))
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": commit,
              "src_uncommitted_changes": dirty, "python": platform.python_version(),
              "libcst": metadata.version("libcst"),
              "target": TARGET, "repeat": args.repeat, "quick": args.quick, "floor": args.floor,
              "generated": [], "training": None}
    print(f"torchlint at {commit}{' + uncommitted src/ changes' if dirty else ''}, "
          f"Python {report['python']}, libcst {report['libcst']}, {len(RULES)} default rules")
    libcst.parse_module("import torch\n")  # libcst's own first-use costs out of the timings
    if args.calls:
        root = args.training.expanduser()
        if not root.is_dir():
            print(f"no training directory at {root} (bench/training_corpus.py materialise writes it)")
            return 0
        counted = count_calls(training_corpus.corpus_files(root))
        print(f"one in-process lint of {counted['files']} training files: {counted['calls']:,} Python calls "
              f"({counted['primitive_calls']:,} primitive)")
        if args.json:
            args.json.write_text(json.dumps({**report, "calls": counted}, indent=1) + "\n")
        return 0

    summary = []
    print(f"\n{'generated':<18} {'lines':>7} {'N':>2} {'parse ms':>9} {'(gc off)':>9} {'lint ms':>9} "
          f"{'ratio':>6} {'(gc off)':>8} {'diags':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        for n_lines in (1_000,) if args.quick else (1_000, 10_000):
            path = Path(tmp, f"generated_{n_lines}.py")
            path.write_text(bench.generate_file(n_lines))
            row = {"name": path.name, **measure(str(path), path.read_bytes(), args.repeat, args.floor)}
            report["generated"].append(row)
            print(f"{path.name:<18} {row['lines']:>7,} {row['repeat']:>2} {row['parse_ms']:>9.1f} "
                  f"{row['parse_gc_off_ms']:>9.1f} {row['lint_ms']:>9.1f} {row['ratio']:>5.2f}x "
                  f"{row['ratio_gc_off']:>7.2f}x {row['diagnostics']:>5}"
                  + (f"   floor {row['floor_ms']:.1f} ms, {row['floor_ratio']:.2f}x" if args.floor else ""))
            summary.append(verdict(f"generated {n_lines:,} lines", row["ratio"]))

    root = args.training.expanduser()
    if not root.is_dir():
        print(f"\nno training directory at {root} (bench/training_corpus.py materialise writes it): "
              "generated files only")
    else:
        files = training_corpus.corpus_files(root)
        total = len(files)
        if args.quick and total > 100:
            files = files[::-(-total // 100)]
        rows, skipped = [], []
        for i, f in enumerate(files, 1):
            rel = str(f.relative_to(root))
            try:
                rows.append({"path": rel, **measure(str(f), f.read_bytes(), args.repeat, args.floor)})
            except (ValueError, OSError) as exc:
                skipped.append({"path": rel, "why": str(exc)})
            if i % 100 == 0:
                print(f"  ... {i}/{len(files)} training files", file=sys.stderr, flush=True)
        parse_s = sum(r["parse_ms"] for r in rows) / 1e3
        parse_off_s = sum(r["parse_gc_off_ms"] for r in rows) / 1e3
        lint_s = sum(r["lint_ms"] for r in rows) / 1e3
        train = {"dir": str(root), "files_found": total, "files_measured": len(rows),
                 "notebooks_measured": sum(r["path"].endswith(".ipynb") for r in rows),
                 "skipped": skipped, "parse_s_sum": parse_s, "parse_gc_off_s_sum": parse_off_s,
                 "lint_s_sum": lint_s, "ratio": lint_s / parse_s if parse_s else None,
                 "ratio_gc_off": lint_s / parse_off_s if parse_off_s else None,
                 "median_file_ratio": statistics.median(r["ratio"] for r in rows) if rows else None,
                 "rows": rows}
        if args.floor and rows:
            floor_s = sum(r["floor_ms"] for r in rows) / 1e3
            train.update(floor_s_sum=floor_s, floor_ratio=floor_s / parse_s if parse_s else None,
                         median_file_floor_ratio=statistics.median(r["floor_ratio"] for r in rows))
        report["training"] = train
        print(f"\ntraining code under {root}: {len(rows)} files measured "
              f"({train['notebooks_measured']} notebooks) of {total}, {len(skipped)} skipped")
        for s in skipped:
            print(f"  skipped {s['path']}: {s['why']}")
        if rows:
            print(f"  sum of parses {parse_s:.2f} s ({parse_off_s:.2f} s gc off), sum of lints {lint_s:.2f} s, "
                  f"aggregate {train['ratio']:.2f}x ({train['ratio_gc_off']:.2f}x gc off), "
                  f"median per file {train['median_file_ratio']:.2f}x")
            if args.floor:
                print(f"  with the checks emptied (--floor): sum of lints {train['floor_s_sum']:.2f} s, "
                      f"aggregate {train['floor_ratio']:.2f}x, median per file {train['median_file_floor_ratio']:.2f}x")
            ranked = [r for r in rows if r["lines"] >= TOP_MIN_LINES]
            print(f"\n  highest lint/parse ratios (files of {TOP_MIN_LINES}+ lines, {len(rows) - len(ranked)} "
                  f"smaller ones not ranked):\n  {'lines':>7} {'parse ms':>9} {'lint ms':>9} {'ratio':>6}  path")
            for r in sorted(ranked, key=lambda r: -r["ratio"])[:10]:
                print(f"  {r['lines']:>7,} {r['parse_ms']:>9.1f} {r['lint_ms']:>9.1f} {r['ratio']:>5.2f}x  {r['path']}")
            summary.append(verdict("aggregate training", train["ratio"]))

    print()
    print("\n".join(summary))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
