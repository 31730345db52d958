#!/usr/bin/env python3
"""Run torchlint over every package that bench/corpus.py cached.

Usage:
    python bench/run_corpus.py [--cache DIR] [--torchlint PATH] [--jobs N] [--context N]

One ``torchlint check --output-format json --exit-zero --no-cache`` subprocess per package,
run from inside the cache (so no pyproject.toml of this repository applies).
Writes CACHE/results.json (every finding, with its package, the path inside the
package and the source lines around it) and CACHE/results-stderr.txt (anything
torchlint printed on stderr, e.g. tracebacks), then prints a per-rule count
table, a per-package table, the number of files checked and the wall time.

bench/triage.json holds the hand triage of the findings of the last measured
run (docs/real-world.md): when present, the per-rule table also shows how many
findings were judged true/false positives, and findings not in it are listed
as untriaged (new findings after a rule change), with triaged findings that no
longer appear listed as gone.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus as corpus_mod  # noqa: E402


def _torchlint_cmd(explicit):
    if explicit:
        return [explicit]
    found = shutil.which("torchlint")
    if found:
        return [found]
    exe_dir = Path(sys.executable).parent
    if (exe_dir / "torchlint").exists():
        return [str(exe_dir / "torchlint")]
    return [sys.executable, "-m", "torchlint"]


def _count_py(src: Path) -> int:
    # Same skips as torchlint's discovery for the common cases.
    skip = {".git", "__pycache__", ".venv", "venv", ".tox", "node_modules", "build", "dist",
            ".eggs", "site-packages", ".ipynb_checkpoints"}
    n = 0
    for folder, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if d not in skip and not d.endswith(".egg-info")]
        n += sum(1 for f in names if f.endswith(".py"))
    return n


def run_one(cmd, info, cache: Path, context: int) -> dict:
    src = Path(info["dir"])
    start = time.perf_counter()
    proc = subprocess.run(cmd + ["check", "--output-format", "json", "--exit-zero", "--no-cache", str(src)],
                          capture_output=True, text=True, cwd=cache)
    elapsed = time.perf_counter() - start
    try:
        findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    except json.JSONDecodeError:
        findings = []
    for f in findings:
        path = Path(f["path"])
        if not path.is_absolute():
            path = (cache / path).resolve()
        f["package"] = f"{info['name']}=={info['version']}"
        try:
            f["relpath"] = path.relative_to(src).as_posix()
        except ValueError:
            f["relpath"] = path.as_posix()
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            lo, hi = max(0, f["line"] - 1 - context), min(len(lines), f["line"] + context)
            f["context"] = [f"{i + 1:5d}{'>' if i + 1 == f['line'] else ' '} {lines[i]}"
                            for i in range(lo, hi)]
        except OSError:
            f["context"] = []
    return {"package": info["name"], "version": info["version"], "dir": str(src),
            "files": _count_py(src), "seconds": round(elapsed, 2), "returncode": proc.returncode,
            "stderr": proc.stderr, "findings": findings}


def _provenance(cmd) -> dict:
    """Which torchlint produced the results: its version and, from a checkout, the commit."""
    out = {"torchlint": cmd}
    try:
        out["version"] = subprocess.run(cmd + ["--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    repo = Path(__file__).resolve().parent.parent
    try:
        git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], capture_output=True, text=True).stdout.strip()
        out["commit"] = git("rev-parse", "--short", "HEAD")
        out["src_dirty"] = bool(git("status", "--porcelain", "--", "src"))
    except OSError:
        pass
    return out


TRIAGE = Path(__file__).resolve().parent / "triage.json"


def _triage():
    if not TRIAGE.is_file():
        return {}
    return {(t["package"], t["path"], t["line"], t["rule"]): t for t in json.loads(TRIAGE.read_text())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--torchlint", default=None, help="torchlint executable (default: on PATH / next to python)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--context", type=int, default=8, help="source lines kept around each finding")
    ap.add_argument("--only", default="", help="comma-separated package names")
    args = ap.parse_args(argv)

    cache = (args.cache or corpus_mod.default_cache()).expanduser().resolve()
    only = {s.strip() for s in args.only.split(",") if s.strip()} or None
    infos = [i for i in corpus_mod.corpus(cache, only) if i["dir"]]
    cmd = _torchlint_cmd(args.torchlint)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda i: run_one(cmd, i, cache, args.context), infos))
    wall = time.perf_counter() - start

    # A partial run (--only) must not overwrite the full results.
    stem = "results" if only is None else "results-only"
    (cache / f"{stem}.json").write_text(json.dumps(results, indent=1))
    (cache / f"{stem}-meta.json").write_text(json.dumps(_provenance(cmd), indent=1))
    with open(cache / f"{stem}-stderr.txt", "w") as fh:
        for r in results:
            if r["stderr"].strip() or r["returncode"] not in (0,):
                fh.write(f"=== {r['package']}=={r['version']} (exit {r['returncode']})\n{r['stderr']}\n")

    triage = _triage()
    findings = [f for r in results for f in r["findings"]]
    verdict = collections.Counter()
    untriaged, seen = [], set()
    for f in findings:
        key = (f["package"], f["relpath"], f["line"], f["code"])
        t = triage.get(key)
        seen.add(key)
        if t is None:
            untriaged.append(f)
        else:
            verdict[(f["code"], t["verdict"])] += 1
    by_rule = collections.Counter(f["code"] for f in findings)
    kinds = ["TP", "TP-test", "FP"]
    print(f"{'rule':8} {'count':>6}" + ("".join(f" {k:>8}" for k in kinds) + f" {'new':>5}" if triage else ""))
    for code in sorted(by_rule):
        line = f"{code:8} {by_rule[code]:6d}"
        if triage:
            new = sum(1 for f in untriaged if f["code"] == code)
            line += "".join(f" {verdict[(code, k)]:8d}" for k in kinds) + f" {new:5d}"
        print(line)
    total = f"{'total':8} {sum(by_rule.values()):6d}"
    if triage:
        total += "".join(f" {sum(v for (c, k), v in verdict.items() if k == kk):8d}" for kk in kinds)
        total += f" {len(untriaged):5d}"
    print(total)
    print()
    print(f"{'package':28} {'files':>6} {'secs':>7} {'findings':>8}  by rule")
    for r in sorted(results, key=lambda r: r["package"]):
        rules = collections.Counter(f["code"] for f in r["findings"])
        detail = ", ".join(f"{c}:{n}" for c, n in sorted(rules.items()))
        flag = "" if r["returncode"] == 0 and not r["stderr"].strip() else "  [stderr/exit!]"
        print(f"{r['package'] + '==' + r['version']:28} {r['files']:6d} {r['seconds']:7.1f} "
              f"{len(r['findings']):8d}  {detail}{flag}")
    print()
    print(f"packages: {len(results)}  files: {sum(r['files'] for r in results)}  "
          f"wall: {wall:.1f}s (jobs={args.jobs})")
    print(f"results: {cache / (stem + '.json')}  ({_provenance(cmd)})")
    if triage:
        if untriaged:
            print(f"\nuntriaged findings ({len(untriaged)}), not in {TRIAGE.name}:")
            for f in untriaged:
                print(f"  {f['package']} {f['relpath']}:{f['line']} {f['code']}")
        ran = {f"{r['package']}=={r['version']}" for r in results}
        gone = [k for k in triage if k not in seen and k[0] in ran]
        if gone:
            print(f"\ntriaged findings no longer reported ({len(gone)}):")
            for k in gone:
                print(f"  {k[0]} {k[1]}:{k[2]} {k[3]} (was {triage[k]['verdict']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
