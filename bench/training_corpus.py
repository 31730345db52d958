#!/usr/bin/env python3
"""Precision and recall of torchlint on real training code: tutorial and research repositories.

    python bench/training_corpus.py materialise [--cache DIR] [--mirror DIR]
    python bench/training_corpus.py run --out FINDINGS.json [--pythonpath SRC] [--select TL] [--cache DIR]
    python bench/training_corpus.py score FINDINGS.json [--judgements FILE] [--markdown] [--repo OWNER/NAME ...]

The corpus (``bench/training/corpus.json``) names training and evaluation scripts and
notebooks of public repositories, each pinned by commit; only this metadata is in the
repository. ``materialise`` writes every pinned file from a bare git mirror
(``MIRROR/<owner+name>/repo``, made with ``git clone --mirror``; ``--mirror`` or
``$TORCHLINT_MIRROR``, else ``~/.cache/torchlint-bench/mirror``) into the cache
(``$TORCHLINT_BENCH_CACHE`` or ``~/.cache/torchlint-bench``, under ``training/``).

``run`` lints the materialised files with the torchlint found on ``--pythonpath`` in a
subprocess, with no config file (``--isolated``): the default rules, or with ``--select TL``
every rule, the opt-in ones included (as ``bench/findings.py`` does). The findings are keyed
``owner/name:path[:cell]:line:CODE``.

``score`` compares findings with two kinds of ground truth:

- judgements (``bench/training/judgements.json``): a verdict per finding key, ``TP``, ``FP``
  or ``debatable``, written by reading the code around each finding;
- labels (``bench/training/labels/<owner+name>.json``): every catalogue hazard of a file, read
  in full before looking at torchlint's output on it. A labelled hazard is found when a
  finding has the same file, cell, line and code. There is no line tolerance: a label gives
  the line torchlint's rule page says the finding goes on, and a finding one line off is on
  another statement, so counting it would hide real reporting errors.

A finding with no judgement that matches a label counts as a true positive (a debatable one
where the label says ``debatable``); other findings without a judgement are listed as
unjudged. Recall is measured on labelled files only, over labels not marked debatable.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
TRAINING = HERE / "training"
CORPUS_FILE = TRAINING / "corpus.json"
LABELS_DIR = TRAINING / "labels"
JUDGEMENTS_FILE = TRAINING / "judgements.json"
# Bare clones, one per repository: ``git clone --mirror https://github.com/OWNER/NAME
# MIRROR/OWNER+NAME/repo``. ``$TORCHLINT_MIRROR`` says where, as ``--mirror`` does.
DEFAULT_MIRROR = Path(os.environ.get("TORCHLINT_MIRROR") or Path.home() / ".cache" / "torchlint-bench" / "mirror")
VERDICTS = ("TP", "FP", "debatable")
STATUS_PREFIX = "TL0"  # TL001 parse error, TL002 internal error, ...: about the file, not a hazard
RUN_TIMEOUT_S = 1800


class UsageError(Exception):
    """Bad input or a missing prerequisite: reported as one line, exit 2."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The corpus and where its files live.


def folder_name(repo: str) -> str:
    """``owner/name`` -> ``owner+name``, the mirror's and the cache's folder name."""
    return repo.replace("/", "+", 1)


def load_corpus(path: Path = CORPUS_FILE) -> list:
    try:
        repos = json.loads(path.read_text())["repos"]
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{path}: not a corpus file ({exc})") from None
    return repos


def default_cache() -> Path:
    return Path(os.environ.get("TORCHLINT_BENCH_CACHE") or Path.home() / ".cache" / "torchlint-bench")


def training_root(cache) -> Path:
    return (Path(cache).expanduser() if cache else default_cache()) / "training"


def finding_key(repo: str, path: str, cell, line: int, code: str) -> str:
    where = f"{repo}:{path}" + (f":{cell}" if cell is not None else "")
    return f"{where}:{line}:{code}"


# ---------------------------------------------------------------------------
# materialise


def git_dir(mirror: Path, repo: str):
    base = mirror / folder_name(repo) / "repo"
    for candidate in (base, base / ".git"):  # bare, or a clone with a work tree
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def git_show(gitdir: Path, commit: str, path: str):
    proc = subprocess.run(["git", f"--git-dir={gitdir}", "show", f"{commit}:{path}"],
                          capture_output=True, timeout=120)
    return proc.stdout if proc.returncode == 0 else None


def materialise(args) -> int:
    root = training_root(args.cache)
    not_fetched, unreadable, written = [], [], 0
    for entry in load_corpus(args.corpus):
        gitdir = git_dir(args.mirror, entry["repo"])
        if gitdir is None:
            not_fetched.append(entry["repo"])
            continue
        for path in entry["files"]:
            data = git_show(gitdir, entry["commit"], path)
            if data is None:
                unreadable.append(f"{entry['repo']}@{entry['commit'][:10]}:{path}")
                continue
            target = root / folder_name(entry["repo"]) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
    log(f"{written} files written under {root}")
    for name in unreadable:
        log(f"  cannot read {name} (commit or blob missing in the mirror; fetch the repository again)")
    if not_fetched:
        log(f"not fetched into {args.mirror}: {', '.join(not_fetched)}")
        log("  bring them with the fetch tool (" + ", ".join(f"github:{r}" for r in not_fetched)
            + "), then run materialise again")
    return 1 if (not_fetched or unreadable) else 0


# ---------------------------------------------------------------------------
# run


def torchlint_env(pythonpath: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pythonpath)  # replaced, not extended: nothing else may shadow it
    return env


def opt_in_codes(python: str, pythonpath: Path) -> list:
    probe = ("from torchlint.rules import RULES_BY_CODE\n"
             "print(','.join(sorted(c for c, r in RULES_BY_CODE.items() if not r.default)))")
    proc = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                          env=torchlint_env(pythonpath), timeout=120)
    if proc.returncode != 0:
        raise UsageError(f"cannot import torchlint from {pythonpath}: "
                         f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return [c for c in proc.stdout.strip().split(",") if c]


def rule_arguments(select, python: str, pythonpath: Path) -> list:
    if not select:
        return []
    args = ["--select", select]
    if select.strip().upper() in ("TL", "ALL"):
        # TL and ALL name the default rules only; opt-in rules are named one by one.
        args += ["--extend-select", ",".join(opt_in_codes(python, pythonpath))]
    return args


def materialised_files(root: Path, repos: list) -> tuple:
    present, missing = [], []
    for entry in repos:
        for path in entry["files"]:
            rel = f"{folder_name(entry['repo'])}/{path}"
            (present if (root / rel).is_file() else missing).append(rel)
    return present, missing


def corpus_files(root: Path, corpus: Path = CORPUS_FILE) -> list:
    """The materialised files of ``corpus`` under ``root``, sorted: what the benchmarks
    measure. Not every file under ``root``: the distributed corpus materialises into the
    same folder, and a file the corpus no longer lists stays there."""
    return sorted(root / rel for rel in materialised_files(root, load_corpus(corpus))[0])


def copy_corpus(root: Path, dest: Path, corpus: Path = CORPUS_FILE) -> list:
    """``corpus_files`` copied into a fresh ``dest`` with their layout, for a command that
    lints a whole folder; returns the copies."""
    shutil.rmtree(dest, ignore_errors=True)
    copies = []
    for path in corpus_files(root, corpus):
        target = dest / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copies.append(target)
    return copies


def split_path(rel: str) -> tuple:
    """``owner+name/dir/file.py`` -> (``owner/name``, ``dir/file.py``)."""
    folder, _, path = rel.partition("/")
    return folder.replace("+", "/", 1), path


def run(args) -> int:
    root = training_root(args.cache)
    repos = load_corpus(args.corpus)
    files, missing = materialised_files(root, repos)
    if missing:
        raise UsageError(f"{len(missing)} corpus files are not materialised under {root} "
                         f"(first: {missing[0]}); run materialise first")
    rules = rule_arguments(args.select, args.python, args.pythonpath)
    cmd = [args.python, "-m", "torchlint", "check", "--output-format", "json", "--exit-zero",
           "--no-cache", "--isolated", "--jobs", str(args.jobs), *rules, *files]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True,
                          env=torchlint_env(args.pythonpath), timeout=RUN_TIMEOUT_S)
    try:
        raw = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise UsageError(f"torchlint printed no JSON (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    findings = []
    for f in raw:
        repo, path = split_path(Path(os.path.relpath(os.path.join(root, f["path"]), root)).as_posix())
        cell = f.get("cell")
        findings.append({"key": finding_key(repo, path, cell, f["line"], f["code"]), "repo": repo,
                         "path": path, "cell": cell, "line": f["line"], "column": f["column"],
                         "code": f["code"], "message": f["message"]})
    findings.sort(key=lambda f: (f["repo"], f["path"], f["cell"] or 0, f["line"], f["column"], f["code"]))
    out = {"torchlint": {"pythonpath": str(args.pythonpath), "commit": git_commit(args.pythonpath)},
           "rules": rules or "default", "files": len(files), "findings": findings}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    if proc.stderr.strip():
        log(proc.stderr.strip()[-2000:])
    log(f"{len(findings)} findings in {len(files)} files -> {args.out}")
    return 0


def git_commit(src: Path) -> str:
    proc = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip()


# ---------------------------------------------------------------------------
# score


def load_labels(folder: Path) -> dict:
    """{(repo, path): [label, ...]} for every labelled file (an empty list: read, no hazard)."""
    out = {}
    for label_file in sorted(folder.glob("*.json")):
        data = json.loads(label_file.read_text())
        for path, entry in data["files"].items():
            out[(data["repo"], path)] = [dict(h, key=finding_key(data["repo"], path, h.get("cell"),
                                                                  h["line"], h["code"]))
                                         for h in entry["hazards"]]
    return out


def verdict_of(finding: dict, judgements: dict, labels_by_key: dict):
    judged = judgements.get(finding["key"])
    if judged:
        return judged["verdict"]
    label = labels_by_key.get(finding["key"])
    if label is not None:
        return "debatable" if label.get("debatable") else "TP"
    return None


def score(findings: list, judgements: dict, labels: dict, corpus_files=None) -> dict:
    """Per-rule counts and the recall of labelled hazards; everything the report needs."""
    labels_by_key = {h["key"]: h for hazards in labels.values() for h in hazards}
    found_keys = {f["key"] for f in findings}
    per_rule = defaultdict(Counter)
    unjudged, unlabelled_tp, not_linted = [], [], []
    for f in findings:
        if f["code"].startswith(STATUS_PREFIX):
            not_linted.append(f)  # a parse error or an internal error: no rule ran on the file (or the cell)
            continue
        verdict = verdict_of(f, judgements, labels_by_key)
        per_rule[f["code"]]["findings"] += 1
        per_rule[f["code"]][verdict or "unjudged"] += 1
        if verdict is None:
            unjudged.append(f)
        elif verdict == "TP" and (f["repo"], f["path"]) in labels and f["key"] not in labels_by_key:
            unlabelled_tp.append(f["key"])  # a label is missing: the labels of that file are incomplete
    missed = []
    for hazards in labels.values():
        for h in hazards:
            counter = per_rule[h["code"]]
            kind = "labels_debatable" if h.get("debatable") else "labels"
            counter[kind] += 1
            if h["key"] in found_keys:
                counter[kind + "_found"] += 1
            elif not h.get("debatable"):
                missed.append(h)
    stray = sorted(f"{r}:{p}" for r, p in labels if corpus_files is not None and (r, p) not in corpus_files)
    return {"per_rule": {code: dict(c) for code, c in sorted(per_rule.items())}, "unjudged": unjudged,
            "missed": missed, "not_linted": not_linted, "unlabelled_tp": unlabelled_tp, "labels_outside_corpus": stray,
            "labelled_files": len(labels)}


def recall_text(found: int, total: int) -> str:
    return f"{found}/{total} ({100 * found / total:.0f}%)" if total else "-"


COLUMNS = ("findings", "TP", "FP", "debatable", "unjudged")


def table_rows(result: dict) -> list:
    rows, totals = [], Counter()
    for code, c in result["per_rule"].items():
        rows.append([code, *(str(c.get(k, 0)) for k in COLUMNS),
                     recall_text(c.get("labels_found", 0), c.get("labels", 0)),
                     f"{c.get('labels_debatable_found', 0)}/{c.get('labels_debatable', 0)}"])
        totals.update(c)
    rows.append(["all", *(str(totals.get(k, 0)) for k in COLUMNS),
                 recall_text(totals.get("labels_found", 0), totals.get("labels", 0)),
                 f"{totals.get('labels_debatable_found', 0)}/{totals.get('labels_debatable', 0)}"])
    return rows


HEADER = ["rule", *COLUMNS, "recall (labels)", "debatable labels found"]


def render(result: dict, markdown: bool) -> str:
    rows = table_rows(result)
    lines = []
    if markdown:
        lines += ["| " + " | ".join(HEADER) + " |", "|---|" + "---:|" * (len(HEADER) - 1)]
        lines += ["| " + " | ".join(f"**{c}**" if row[0] == "all" else c for c in row) + " |" for row in rows]
    else:
        widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
        lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
                  for row in [HEADER, *rows]]
    lines.append("")
    lines.append(f"labelled files: {result['labelled_files']}")
    lines += section("missed labelled hazards", [(h["key"], h.get("why", "")) for h in result["missed"]], markdown)
    lines += section("unjudged findings", [(f["key"], f["message"][:90]) for f in result["unjudged"]], markdown)
    lines += section("true positives on labelled files without a label",
                     [(key, "") for key in result["unlabelled_tp"]], markdown)
    # a notebook cell that does not parse is left out and the notebook's other cells are linted
    lines += section("files and notebook cells no rule ran on (parse or internal errors)",
                     [(f"{f['repo']}:{f['path']}" + (f" cell {f['cell']}" if f.get("cell") else ""),
                       f"{f['code']} {f['message'][:70]}") for f in result["not_linted"]],
                     markdown)
    lines += section("labelled files not in the corpus", [(name, "") for name in result["labels_outside_corpus"]],
                     markdown)
    return "\n".join(lines)


def section(title: str, items: list, markdown: bool) -> list:
    """A titled list of (key, note) items; nothing when there are none."""
    if not items:
        return []
    if markdown:
        rows = [f"- `{key}`" + (f" {note}" if note else "") for key, note in items]
    else:
        rows = [f"  {key}" + (f"  {note}" if note else "") for key, note in items]
    return ["", f"{title} ({len(items)}):", *rows]


def score_command(args) -> int:
    findings = json.loads(args.findings.read_text())["findings"]
    judgements = json.loads(args.judgements.read_text()) if args.judgements.is_file() else {}
    bad = {k: v for k, v in judgements.items() if v.get("verdict") not in VERDICTS}
    if bad:
        raise UsageError(f"{args.judgements}: verdicts must be one of {VERDICTS}: {next(iter(bad))}")
    repos = load_corpus(args.corpus)
    corpus_files = {(e["repo"], p) for e in repos for p in e["files"]}
    # Labels are about the repositories of the corpus scored: a companion corpus of other
    # repositories (distributed_corpus.json) is not missing the training corpus's labels.
    in_corpus = {e["repo"] for e in repos}
    if args.repo:
        unknown = sorted(set(args.repo) - in_corpus)
        if unknown:
            raise UsageError(f"--repo names a repository the corpus does not have: {', '.join(unknown)}")
        # A part of the corpus scored alone: its findings and its labels, nothing of the others.
        in_corpus = set(args.repo)
        findings = [f for f in findings if f["repo"] in in_corpus]
        corpus_files = {(repo, path) for repo, path in corpus_files if repo in in_corpus}
    labels = {key: hazards for key, hazards in load_labels(args.labels).items() if key[0] in in_corpus}
    result = score(findings, judgements, labels, corpus_files)
    print(render(result, args.markdown))
    return 0


# ---------------------------------------------------------------------------


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS_FILE, help="the corpus file (default: %(default)s)")
    sub = ap.add_subparsers(dest="command", required=True)
    mat = sub.add_parser("materialise", help="write the pinned files from the git mirrors into the cache")
    mat.add_argument("--cache", type=Path, default=None, help="default $TORCHLINT_BENCH_CACHE or ~/.cache/torchlint-bench")
    mat.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="folder of MIRROR/<owner+name>/repo (default: %(default)s)")
    run_ = sub.add_parser("run", help="lint the materialised corpus and write the findings")
    run_.add_argument("--out", type=Path, required=True)
    run_.add_argument("--cache", type=Path, default=None)
    run_.add_argument("--python", default=sys.executable, help="interpreter that runs torchlint (default: this one)")
    run_.add_argument("--pythonpath", type=Path, default=REPO / "src", help="torchlint's src folder (default: %(default)s)")
    run_.add_argument("--select", default=None, help="as torchlint's --select; TL or ALL adds the opt-in rules")
    run_.add_argument("--jobs", type=int, default=2)
    sc = sub.add_parser("score", help="per-rule precision and recall of a findings file")
    sc.add_argument("findings", type=Path, metavar="FINDINGS.json")
    sc.add_argument("--judgements", type=Path, default=JUDGEMENTS_FILE)
    sc.add_argument("--labels", type=Path, default=LABELS_DIR, help="folder of label files (default: %(default)s)")
    sc.add_argument("--markdown", action="store_true", help="a Markdown table, as in docs/real-world.md")
    sc.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME",
                    help="score only these repositories of the corpus (repeatable)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.command == "materialise":
            return materialise(args)
        if args.command == "run":
            args.pythonpath = args.pythonpath.resolve()
            return run(args)
        return score_command(args)
    except UsageError as exc:
        print(f"training_corpus.py: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
