#!/usr/bin/env python3
"""Record torchlint's findings on four corpora, and compare two recordings.

    python bench/findings.py record OUT_DIR [--python PY] [--pythonpath SRC]
    python bench/findings.py compare BEFORE_DIR AFTER_DIR

A behaviour-preserving change must leave torchlint's JSON findings byte-identical.
``record`` runs ``torchlint check --output-format json --exit-zero --no-cache
--jobs 2`` twice per corpus (all rules: ``--extend-select TL106,TL601``; and the
default rules alone), one corpus at a time:

  fixtures      ``fixtures`` from the repository root, under the repository's own pyproject.toml
  tests-corpus  every ``tests/corpus/**/*.py`` named one by one from the repository root
                (the repository's pyproject.toml excludes tests/corpus from directory walks,
                so ``torchlint check tests/corpus`` would lint nothing)
  bench-tree    bench/bench.py's tree (timm, lightning, transformers' models, torchvision),
                built afresh from the download cache, linted as ``.`` from inside it
  real-world    docs/real-world.md's 30 packages (bench/corpus.py), one run per package
                from the cache's src/ folder, as bench/run_corpus.py does

Downloads reuse bench/corpus.py and bench/bench.py (cache: $TORCHLINT_BENCH_CACHE or
~/.cache/torchlint-bench, or --cache).  OUT_DIR gets one CORPUS.json per corpus
(the findings sorted, paths relative to the folder torchlint ran in, the SHA-256 of
each run's raw stdout, the exit codes and what was linted), CORPUS.stderr.txt
(torchlint's stderr) and manifest.json (which torchlint, timings; not compared).

``compare`` prints, per corpus, "identical" or what differs (findings added and
removed, raw output, exit codes, stderr, inputs) and exits 1 when anything differs.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import bench as bench_mod  # noqa: E402  (the benchmark tree: CORPUS, fetch, build_tree)
import corpus as corpus_mod  # noqa: E402  (the real-world corpus's downloader)
import run_corpus  # noqa: E402  (its .py file count, reported next to each package)

CORPORA = ("fixtures", "tests-corpus", "bench-tree", "real-world")
OPT_IN = ("TL106", "TL601")
RULE_SETS = {"all": ["--extend-select", ",".join(OPT_IN)], "default": []}
RUN_TIMEOUT_S = 1800
DIFF_LINES_SHOWN = 40


class UsageError(Exception):
    """Bad input from the command line: reported as one line, exit 2."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Which torchlint runs.


def torchlint_env(pythonpath: Path) -> dict:
    # Replace, not extend, PYTHONPATH: a stray entry could shadow the tree under test.
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pythonpath)
    return env


def which_torchlint(python: str, pythonpath: Path) -> dict:
    """The torchlint that ``python -m torchlint`` imports; refuses one from elsewhere."""
    probe = "import torchlint; print(torchlint.__file__); print(torchlint.__version__)"
    try:
        proc = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                              env=torchlint_env(pythonpath), timeout=120)
    except OSError as exc:
        raise UsageError(f"cannot run {python}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise UsageError(f"{python} cannot import torchlint from {pythonpath}: "
                         f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    module_file, version = proc.stdout.split("\n")[:2]
    if pythonpath.resolve() not in Path(module_file).resolve().parents:
        # An editable install elsewhere wins over a wrong --pythonpath: say so.
        raise UsageError(f"torchlint is imported from {module_file}, not from {pythonpath}")
    return {"python": python, "pythonpath": str(pythonpath), "module": module_file,
            "version": version.strip(), **git_state(pythonpath)}


def git_state(src: Path) -> dict:
    def git(*args):
        return subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "src_dirty": bool(git("status", "--porcelain", "--", "."))}
    except OSError:
        return {}


# ---------------------------------------------------------------------------
# What is linted: (label, folder torchlint runs in, its arguments) per run.


def fixtures_runs(repo: Path) -> tuple:
    files = run_corpus._count_py(repo / "fixtures")
    return [("fixtures", repo, ["fixtures"])], {"files": files}


def tests_corpus_runs(repo: Path) -> tuple:
    files = sorted(p.relative_to(repo).as_posix() for p in (repo / "tests" / "corpus").rglob("*.py"))
    if not files:
        raise UsageError(f"{repo / 'tests' / 'corpus'}: no .py files")
    return [("tests/corpus", repo, files)], {"files": len(files), "paths": files}


def bench_tree_runs(cache: Path, work: Path) -> tuple:
    """bench/bench.py's full tree, hard-linked into a folder of our own (concurrent runs are safe)."""
    sources = []
    for name, version, kind, sub in bench_mod.CORPUS:
        folder = bench_mod.fetch(name, version, kind, cache)
        root = folder / sub if sub else folder
        if not root.is_dir():
            raise UsageError(f"{root} not found in {name}=={version}")
        # The same label as bench.py's main(): the tree's top folders are named by it.
        sources.append((f"{name}-{version}" + (f"-{sub.replace('/', '.')}" if sub else ""), root))
    tree = bench_mod.build_tree(sources, work / "tree", models_stride=1)
    inputs = {"files": tree["n_files"], "lines": tree["n_lines"], "packages": tree["packages"]}
    return [("tree", Path(tree["root"]), ["."])], inputs


def real_world_runs(cache: Path) -> tuple:
    infos = corpus_mod.corpus(cache)
    missing = [f"{i['name']}=={i['version']}" for i in infos if not i["dir"]]
    if missing:
        log(f"  WARNING: real-world packages not downloaded: {', '.join(missing)}")
    src_root = (cache / "src").resolve()
    stray = find_pyproject(src_root)
    if stray is not None:
        raise UsageError(f"{stray} would configure torchlint for the real-world corpus; move the cache")
    runs, packages = [], {}
    for info in (i for i in infos if i["dir"]):
        folder = Path(info["dir"]).resolve()
        label = f"{info['name']}=={info['version']}"
        runs.append((label, src_root, [folder.relative_to(src_root).as_posix()]))
        packages[label] = run_corpus._count_py(folder)
    inputs = {"files": sum(packages.values()), "packages": packages, "missing": missing}
    return runs, inputs


def find_pyproject(folder: Path):
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate / "pyproject.toml"
    return None


# ---------------------------------------------------------------------------
# Running torchlint and normalising what it prints.


def lint(run: tuple, rule_args: list, tl: dict, jobs: int) -> dict:
    label, cwd, paths = run
    cmd = [tl["python"], "-m", "torchlint", "check", "--output-format", "json", "--exit-zero",
           "--no-cache", "--jobs", str(jobs), *rule_args, *paths]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                              env=torchlint_env(Path(tl["pythonpath"])), timeout=RUN_TIMEOUT_S)
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired:
        stdout, stderr, code = "", f"findings.py: timed out after {RUN_TIMEOUT_S} s\n", None
    seconds = time.perf_counter() - start
    try:
        raw = json.loads(stdout)
    except json.JSONDecodeError:
        raw = None
        stderr += f"findings.py: stdout is not JSON; it began with: {stdout[:500]!r}\n"
    return {"label": label, "cwd": cwd, "exit": code, "seconds": round(seconds, 2), "raw": raw,
            "stdout_sha256": hashlib.sha256(stdout.encode()).hexdigest(), "stderr": stderr}


def normalised(record: dict, cwd: Path, root: Path) -> dict:
    out = dict(record)
    absolute = os.path.normpath(os.path.join(cwd, record["path"]))
    out["path"] = Path(os.path.relpath(absolute, root)).as_posix()
    return out


def finding_key(f: dict) -> tuple:
    return (f["path"], f["line"], f["column"], f["code"], json.dumps(f, sort_keys=True))


def lint_corpus(runs: list, tl: dict, jobs: int) -> dict:
    """Every run under every rule set: findings sorted, paths relative to the corpus root."""
    root = runs[0][1]  # every run of one corpus shares its folder
    result = {}
    for rules, rule_args in RULE_SETS.items():
        outcomes = [lint(run, rule_args, tl, jobs) for run in runs]
        findings = [normalised(f, o["cwd"], root) for o in outcomes for f in (o["raw"] or [])]
        result[rules] = {
            "findings": sorted(findings, key=finding_key),
            "runs": [{k: o[k] for k in ("label", "exit", "stdout_sha256")} for o in outcomes],
            "seconds": round(sum(o["seconds"] for o in outcomes), 2),
            "per_run_seconds": {o["label"]: o["seconds"] for o in outcomes},
            "stderr": "".join(_stderr_section(rules, o) for o in outcomes if o["stderr"]),
            "failed": [o["label"] for o in outcomes if o["exit"] != 0 or o["raw"] is None],
        }
        log(f"    {rules:8} {len(findings):5d} findings  {result[rules]['seconds']:7.1f} s")
    return result


def _stderr_section(rules: str, outcome: dict) -> str:
    return f"=== rules={rules} run={outcome['label']} exit={outcome['exit']}\n{outcome['stderr']}"


def opt_in_consistent(result: dict) -> bool:
    """The default rules' findings are the all-rules findings minus the opt-in rules' ones."""
    expected = [f for f in result["all"]["findings"] if f["code"] not in OPT_IN]
    return expected == result["default"]["findings"]


# ---------------------------------------------------------------------------
# record


def corpus_runs(name: str, repo: Path, cache: Path, work: Path) -> tuple:
    if name == "fixtures":
        return fixtures_runs(repo)
    if name == "tests-corpus":
        return tests_corpus_runs(repo)
    if name == "bench-tree":
        return bench_tree_runs(cache, work)
    return real_world_runs(cache)


def write_corpus(out_dir: Path, name: str, inputs: dict, result: dict) -> None:
    compared = {"corpus": name, "inputs": inputs,
                "rule_sets": {rules: {k: r[k] for k in ("findings", "runs")} for rules, r in result.items()}}
    (out_dir / f"{name}.json").write_text(json.dumps(compared, indent=1, sort_keys=True) + "\n")
    (out_dir / f"{name}.stderr.txt").write_text("".join(r["stderr"] for r in result.values()))


def record_one(name: str, args, tl: dict, work: Path) -> dict:
    log(f"[{name}]")
    runs, inputs = corpus_runs(name, args.repo, args.cache, work)
    result = lint_corpus(runs, tl, args.jobs)
    write_corpus(args.out_dir, name, inputs, result)
    summary = {"files": inputs["files"], "runs": len(runs),
               **{f"findings_{rules}": len(r["findings"]) for rules, r in result.items()},
               **{f"seconds_{rules}": r["seconds"] for rules, r in result.items()},
               "per_run_seconds": {rules: r["per_run_seconds"] for rules, r in result.items()},
               "failed_runs": sorted({label for r in result.values() for label in r["failed"]}),
               "opt_in_consistent": opt_in_consistent(result)}
    if summary["failed_runs"]:
        log(f"  WARNING: runs that failed or printed no JSON: {', '.join(summary['failed_runs'])}")
    if not summary["opt_in_consistent"]:
        log("  WARNING: default-rule findings differ from the all-rules findings minus TL106/TL601")
    return summary


def record(args) -> int:
    tl = which_torchlint(args.python, args.pythonpath)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    args.cache.mkdir(parents=True, exist_ok=True)
    log(f"torchlint {tl['version']} from {tl['module']}; results into {args.out_dir}")
    manifest = {"recorded": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "torchlint": tl, "repo": str(args.repo), "cache": str(args.cache), "jobs": args.jobs,
                "rule_sets": RULE_SETS, "corpora": {}}
    with tempfile.TemporaryDirectory(prefix="findings-", dir=args.cache) as work:
        for name in args.corpora:
            manifest["corpora"][name] = record_one(name, args, tl, Path(work))
    (args.out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print_summary(manifest)
    bad = [n for n, c in manifest["corpora"].items() if c["failed_runs"] or not c["opt_in_consistent"]]
    return 1 if bad else 0


def print_summary(manifest: dict) -> None:
    print(f"{'corpus':14} {'files':>6} {'all rules':>10} {'default':>8} {'secs all':>9} {'secs default':>13}")
    for name, c in manifest["corpora"].items():
        print(f"{name:14} {c['files']:6d} {c['findings_all']:10d} {c['findings_default']:8d} "
              f"{c['seconds_all']:9.1f} {c['seconds_default']:13.1f}")


# ---------------------------------------------------------------------------
# compare


def load_recording(folder: Path) -> dict:
    if not (folder / "manifest.json").is_file():
        raise UsageError(f"{folder}: not a recording (no manifest.json; run 'record' first)")
    out = {}
    for path in sorted(folder.glob("*.json")):
        if path.name != "manifest.json":
            stderr = folder / f"{path.stem}.stderr.txt"
            out[path.stem] = (json.loads(path.read_text()), stderr.read_text() if stderr.is_file() else "")
    return out


def describe(f: dict) -> str:
    return f"{f['path']}:{f['line']}:{f['column']} {f['code']} {f['message']}"


def findings_diff(before: list, after: list) -> list:
    """Lines for findings only in one side; a changed field shows as one removed, one added."""
    keys_before = {finding_key(f): f for f in before}
    keys_after = {finding_key(f): f for f in after}
    removed = [f"    - {describe(f)}" for k, f in keys_before.items() if k not in keys_after]
    added = [f"    + {describe(f)}" for k, f in keys_after.items() if k not in keys_before]
    if (removed or added) or len(before) == len(after):
        return removed + added
    return [f"    duplicates differ: {len(before)} findings before, {len(after)} after"]


def rule_set_diff(rules: str, before: dict, after: dict) -> list:
    lines = findings_diff(before["findings"], after["findings"])
    if lines:
        return [f"  rules={rules}: {len(before['findings'])} -> {len(after['findings'])} findings"] + lines
    out = []
    for b, a in zip(before["runs"], after["runs"]):
        if b["stdout_sha256"] != a["stdout_sha256"]:
            out.append(f"  rules={rules} run={b['label']}: same findings, raw output bytes differ (order?)")
        if b["exit"] != a["exit"]:
            out.append(f"  rules={rules} run={b['label']}: exit {b['exit']} -> {a['exit']}")
    return out


def corpus_diff(before: tuple, after: tuple) -> list:
    (b, b_err), (a, a_err) = before, after
    out = []
    if b["inputs"] != a["inputs"]:
        out.append("  inputs differ (other files linted): compare the 'inputs' of the two JSON files")
    if [r["label"] for r in b["rule_sets"]["all"]["runs"]] != [r["label"] for r in a["rule_sets"]["all"]["runs"]]:
        out.append("  the runs differ (other packages)")
    for rules in sorted(set(b["rule_sets"]) | set(a["rule_sets"])):
        if rules not in b["rule_sets"] or rules not in a["rule_sets"]:
            out.append(f"  rules={rules}: recorded on one side only")
            continue
        out += rule_set_diff(rules, b["rule_sets"][rules], a["rule_sets"][rules])
    if b_err != a_err:
        diff = list(difflib.unified_diff(b_err.splitlines(), a_err.splitlines(), "before", "after", lineterm=""))
        out.append("  stderr differs:")
        out += [f"    {line}" for line in diff[:DIFF_LINES_SHOWN]]
        if len(diff) > DIFF_LINES_SHOWN:
            out.append(f"    ... {len(diff) - DIFF_LINES_SHOWN} more lines")
    return out


def timing_note(before_dir: Path, after_dir: Path, name: str) -> str:
    def seconds(folder):
        corpora = json.loads((folder / "manifest.json").read_text()).get("corpora", {})
        c = corpora.get(name, {})
        return c.get("seconds_all"), c.get("seconds_default")

    (ba, bd), (aa, ad) = seconds(before_dir), seconds(after_dir)
    if None in (ba, bd, aa, ad):
        return ""
    return f"  (lint time, all/default rules: {ba:.1f}/{bd:.1f} s before, {aa:.1f}/{ad:.1f} s after)"


def compare(args) -> int:
    before, after = load_recording(args.before), load_recording(args.after)
    differ = False
    names = set(before) | set(after)
    for name in [c for c in CORPORA if c in names] + sorted(names - set(CORPORA)):
        if name not in before or name not in after:
            print(f"{name}: recorded only in {args.before if name in before else args.after}")
            differ = True
            continue
        lines = corpus_diff(before[name], after[name])
        counts = {r: len(v["findings"]) for r, v in before[name][0]["rule_sets"].items()}
        verdict = "DIFFERS" if lines else "identical"
        print(f"{name}: {verdict} ({', '.join(f'{n} {r}' for r, n in sorted(counts.items()))} findings before)")
        for line in lines:
            print(line)
        note = timing_note(args.before, args.after, name)
        if note:
            print(note)
        differ |= bool(lines)
    return 1 if differ else 0


# ---------------------------------------------------------------------------


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="lint every corpus and write the findings into OUT_DIR")
    rec.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    rec.add_argument("--python", default=sys.executable, help="interpreter that runs torchlint (default: this one)")
    rec.add_argument("--pythonpath", type=Path, default=None,
                     help="torchlint's src folder (default: $PYTHONPATH, else this repository's src/)")
    rec.add_argument("--repo", type=Path, default=REPO,
                     help="where fixtures/ and tests/corpus/ are read from (default: this repository)")
    rec.add_argument("--cache", type=Path, default=None,
                     help="download cache (default $TORCHLINT_BENCH_CACHE or ~/.cache/torchlint-bench)")
    rec.add_argument("--corpora", default=",".join(CORPORA), help=f"comma-separated subset of {', '.join(CORPORA)}")
    rec.add_argument("--jobs", type=int, default=2, help="torchlint --jobs (default 2)")
    rec.add_argument("--overwrite", action="store_true", help="replace a recording already in OUT_DIR")
    cmp_ = sub.add_parser("compare", help="say per corpus whether two recordings are identical")
    cmp_.add_argument("before", type=Path, metavar="BEFORE_DIR")
    cmp_.add_argument("after", type=Path, metavar="AFTER_DIR")
    return ap.parse_args(argv)


def resolve_record_args(args) -> None:
    args.out_dir = args.out_dir.resolve()
    if (args.out_dir / "manifest.json").exists() and not args.overwrite:
        # A baseline recorded over by mistake is lost for good: make that explicit.
        raise UsageError(f"{args.out_dir} already holds a recording; pick another OUT_DIR or pass --overwrite")
    args.repo = args.repo.resolve()
    args.cache = (args.cache or corpus_mod.default_cache()).expanduser().resolve()
    env_path = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    args.pythonpath = (args.pythonpath or Path(env_path or REPO / "src")).resolve()
    args.corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    unknown = [c for c in args.corpora if c not in CORPORA]
    if unknown or not args.corpora:
        raise UsageError(f"--corpora: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(CORPORA)}")
    if args.jobs < 1:
        raise UsageError("--jobs must be 1 or more")
    for folder in ("fixtures", "tests/corpus"):
        if not (args.repo / folder).is_dir():
            raise UsageError(f"--repo {args.repo}: no {folder}/ folder")


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "record":
            resolve_record_args(args)
            return record(args)
        return compare(args)
    except UsageError as exc:
        print(f"findings.py: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
