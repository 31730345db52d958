#!/usr/bin/env python3
"""What ``torch.load`` without ``weights_only`` does in real training code, and what TL507 says of it.

    python bench/training_corpus.py materialise        # once: the corpus files, from the git mirrors
    python bench/torch_load_survey.py [--markdown] [--cache DIR] [--mirror DIR]

On the training corpus (``bench/training/corpus.json``), per repository:

- the ``torch.load`` calls without ``weights_only``: TL507's findings at a target of 2.5,
  where it reports every such call (less the loads it never reports: a chosen
  ``pickle_module``, ``**kwargs``, a load of what the same function just saved, test files);
- the torch lower bound the repository's files declare, as torchlint reads it
  (``declared_torch``: the nearest ``pyproject.toml`` or ``requirements*.txt`` at the pinned
  commit, read from the mirror);
- what each call loads (``bench/training/torch_load_judgements.json``, written by reading the
  code that saved the file): a state_dict, a checkpoint dict of state_dicts and plain values,
  tensors, a pickled object (a module, an optimizer, a NumPy array, an argparse.Namespace:
  refused by torch 2.6's weights-only default), or it depends on the file given;
- what TL507 reports with no target (``--isolated``: the newest torch known), which is what a
  project that declares no torch version gets.

The figures and the decision they support are in docs/torchfix.md.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import training_corpus as corpus  # noqa: E402  (a sibling script, as findings.py uses corpus.py)
from torchlint import declared_torch  # noqa: E402

JUDGEMENTS_FILE = corpus.TRAINING / "torch_load_judgements.json"
KINDS = ("state_dict", "checkpoint", "tensors", "object", "object, allow-listed", "depends")
EVERY_CALL_TARGET = "2.5"  # below 2.6, TL507 reports every torch.load that leaves weights_only out


def tl507(root: Path, files: list, target) -> list:
    """TL507's findings on the corpus files, keyed ``owner/name:path[:cell]:line``."""
    cmd = [sys.executable, "-m", "torchlint", "check", "--select", "TL507", "--output-format", "json",
           "--exit-zero", "--no-cache", "--isolated", *(["--target-torch-version", target] if target else []),
           *files]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=corpus.RUN_TIMEOUT_S,
                          env=corpus.torchlint_env(HERE.parent / "src"))
    found = []
    for f in json.loads(proc.stdout):
        if f["code"] != "TL507":
            continue
        repo, path = corpus.split_path(Path(f["path"]).as_posix())
        found.append({"key": corpus.finding_key(repo, path, f.get("cell"), f["line"], "")[:-1],
                      "repo": repo, "path": path, "message": f["message"]})
    return found


def declared_bounds(mirror: Path, entry: dict, paths: set) -> dict:
    """{path: "2.7" or None} for the corpus files of one repository, as torchlint would read
    their project's dependency lists at the pinned commit."""
    gitdir = corpus.git_dir(mirror, entry["repo"])
    listing = subprocess.run(["git", f"--git-dir={gitdir}", "ls-tree", "-r", "--name-only", entry["commit"]],
                             capture_output=True, text=True, timeout=120).stdout.splitlines()
    wanted = [p for p in listing if Path(p).name == "pyproject.toml"
              or (Path(p).name.startswith("requirements") and p.endswith(".txt"))]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "repo"
        (top / ".git").mkdir(parents=True)  # where the search for a project folder stops
        for path in wanted:
            data = corpus.git_show(gitdir, entry["commit"], path)
            if data is not None:
                (top / path).parent.mkdir(parents=True, exist_ok=True)
                (top / path).write_bytes(data)
        for path in paths:
            folder = (top / path).parent
            folder.mkdir(parents=True, exist_ok=True)
            project = declared_torch.project_folder(str(folder))
            found = declared_torch.declared_in(project) if project else None
            out[path] = f"{found.version[0]}.{found.version[1]}" if found else None
    return out


def survey(args) -> dict:
    root = corpus.training_root(args.cache)
    repos = corpus.load_corpus(args.corpus)
    files, missing = corpus.materialised_files(root, repos)
    if missing:
        raise corpus.UsageError(f"{len(missing)} corpus files are not materialised under {root}; "
                                "run bench/training_corpus.py materialise first")
    every = tl507(root, files, EVERY_CALL_TARGET)
    unknown = {f["key"] for f in tl507(root, files, None)}
    judgements = json.loads(JUDGEMENTS_FILE.read_text())
    by_repo = defaultdict(list)
    for f in every:
        by_repo[f["repo"]].append(f)
    rows, totals, undeclared_totals = [], Counter(), Counter()
    for entry in repos:
        calls = by_repo.get(entry["repo"])
        if not calls:
            continue
        bounds = declared_bounds(args.mirror, entry, {f["path"] for f in calls})
        kinds = Counter(judgements.get(f["key"], {}).get("loads", "unjudged") for f in calls)
        declared = sorted({b for b in bounds.values() if b}, key=lambda v: tuple(map(int, v.split("."))))
        undeclared = sum(1 for f in calls if bounds[f["path"]] is None)
        reported = sum(1 for f in calls if f["key"] in unknown)
        rows.append({"repo": entry["repo"], "calls": len(calls), "undeclared": undeclared,
                     "declared": declared, "kinds": dict(kinds), "reported_unknown": reported})
        totals.update({"calls": len(calls), "undeclared": undeclared, "reported_unknown": reported,
                       "repos": 1, "repos_undeclared": int(undeclared == len(calls)), **kinds})
        # the calls whose project declares no torch version: where the target is unknown
        undeclared_totals.update(judgements.get(f["key"], {}).get("loads", "unjudged")
                                 for f in calls if bounds[f["path"]] is None)
        undeclared_totals.update({"calls": undeclared, "reported_unknown": sum(
            1 for f in calls if bounds[f["path"]] is None and f["key"] in unknown)})
    unjudged = sorted(f["key"] for f in every if f["key"] not in judgements)
    return {"rows": rows, "totals": dict(totals), "undeclared_totals": dict(undeclared_totals),
            "unjudged": unjudged, "reported_unknown_keys": sorted(unknown)}


def render(result: dict, markdown: bool) -> str:
    header = ["repository", "loads without weights_only", "in files declaring no torch", "declared lower bounds",
              *KINDS, "TL507, no target"]
    lines = []
    rows = [[r["repo"], str(r["calls"]), str(r["undeclared"]), ", ".join(r["declared"]) or "-",
             *(str(r["kinds"].get(k, 0)) for k in KINDS), str(r["reported_unknown"])] for r in result["rows"]]
    t, u = result["totals"], result["undeclared_totals"]
    rows.append(["all", str(t.get("calls", 0)), str(t.get("undeclared", 0)), "",
                 *(str(t.get(k, 0)) for k in KINDS), str(t.get("reported_unknown", 0))])
    rows.append(["in files declaring no torch", str(u.get("calls", 0)), str(u.get("calls", 0)), "",
                 *(str(u.get(k, 0)) for k in KINDS), str(u.get("reported_unknown", 0))])
    if markdown:
        lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * 2 + "---|" + "---:|" * (len(KINDS) + 1)]
        lines += ["| " + " | ".join(f"**{c}**" if row in rows[-2:] and c else c for c in row) + " |" for row in rows]
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        lines += ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                  for row in [header, *rows]]
    lines.append("")
    lines.append(f"{t.get('repos', 0)} repositories load without weights_only; in "
                 f"{t.get('repos_undeclared', 0)} of them no file's project declares a torch version.")
    lines.append("TL507 with no target reports: " + (", ".join(result["reported_unknown_keys"]) or "nothing"))
    if result["unjudged"]:
        lines.append(f"unjudged ({len(result['unjudged'])}): " + ", ".join(result["unjudged"]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=corpus.CORPUS_FILE)
    ap.add_argument("--cache", type=Path, default=None, help="as training_corpus.py's")
    ap.add_argument("--mirror", type=Path, default=corpus.DEFAULT_MIRROR, help="as training_corpus.py's")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    try:
        print(render(survey(args), args.markdown))
    except corpus.UsageError as exc:
        print(f"torch_load_survey.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
