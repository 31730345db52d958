"""bench/training_corpus.py: how findings meet labels and judgements, and the real corpus.

The fast tests build a tiny corpus (one git repository made here, a few findings, labels and
judgements) and check the scorer's matching and arithmetic. The ``slow`` test lints the real
training corpus (docs/real-world.md, "Training code corpus") when its git mirrors are on this
machine; ``pytest -m slow`` runs it, the default run leaves it out (pyproject.toml).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "training_corpus.py"


def _load():
    spec = importlib.util.spec_from_file_location("_torchlint_training_corpus", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tc = _load()


def finding(repo, path, line, code, cell=None):
    return {"key": tc.finding_key(repo, path, cell, line, code), "repo": repo, "path": path,
            "cell": cell, "line": line, "column": 1, "code": code, "message": f"{code} message"}


def labels_file(folder: Path, repo: str, files: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"repo": repo, "commit": "0" * 40, "files": files}
    (folder / f"{tc.folder_name(repo)}.json").write_text(json.dumps(data))


def test_keys_name_the_cell_only_for_notebooks():
    assert tc.finding_key("o/r", "a/train.py", None, 12, "TL101") == "o/r:a/train.py:12:TL101"
    assert tc.finding_key("o/r", "nb.ipynb", 3, 4, "TL301") == "o/r:nb.ipynb:3:4:TL301"


def test_labels_match_on_file_cell_line_and_code_exactly(tmp_path):
    labels_file(tmp_path, "o/r", {
        "train.py": {"hazards": [{"line": 10, "code": "TL101", "why": "eval loop"},
                                 {"line": 20, "code": "TL301", "why": "losses.append(loss)"}]},
        "nb.ipynb": {"hazards": [{"cell": 4, "line": 2, "code": "TL101", "why": "predict"},
                                 {"cell": 5, "line": 1, "code": "TL104", "why": "x", "debatable": True}]},
        "clean.py": {"hazards": []},
    })
    labels = tc.load_labels(tmp_path)
    findings = [
        finding("o/r", "train.py", 10, "TL101"),          # matches its label: TP without a judgement
        finding("o/r", "train.py", 21, "TL301"),          # one line off: no match, stays unjudged
        finding("o/r", "nb.ipynb", 2, "TL101", cell=3),   # right line, wrong cell: no match
        finding("o/r", "nb.ipynb", 1, "TL104", cell=5),   # matches a debatable label
    ]
    result = tc.score(findings, {}, labels)
    per_rule = result["per_rule"]
    assert per_rule["TL101"] == {"findings": 2, "TP": 1, "unjudged": 1, "labels": 2, "labels_found": 1}
    assert per_rule["TL301"] == {"findings": 1, "unjudged": 1, "labels": 1}
    assert per_rule["TL104"] == {"findings": 1, "debatable": 1, "labels_debatable": 1,
                                 "labels_debatable_found": 1}
    assert {h["key"] for h in result["missed"]} == {"o/r:train.py:20:TL301", "o/r:nb.ipynb:4:2:TL101"}
    assert [f["key"] for f in result["unjudged"]] == ["o/r:train.py:21:TL301", "o/r:nb.ipynb:3:2:TL101"]
    assert result["labelled_files"] == 3


def test_judgements_decide_and_gaps_in_labels_are_listed(tmp_path):
    labels_file(tmp_path, "o/r", {"train.py": {"hazards": [{"line": 10, "code": "TL101", "why": "w"}]}})
    findings = [finding("o/r", "train.py", 10, "TL101"), finding("o/r", "train.py", 30, "TL301"),
                finding("o/r", "other.py", 5, "TL402"), finding("o/r", "broken.py", 1, "TL001")]
    judgements = {"o/r:train.py:10:TL101": {"verdict": "FP", "why": "a judgement beats a label"},
                  "o/r:train.py:30:TL301": {"verdict": "TP", "why": "the label was missed"},
                  "o/r:other.py:5:TL402": {"verdict": "debatable", "why": "w"}}
    result = tc.score(findings, judgements, tc.load_labels(tmp_path), corpus_files={("o/r", "other.py")})
    assert result["per_rule"]["TL101"]["FP"] == 1
    assert result["per_rule"]["TL101"]["labels_found"] == 1  # recall counts the match, whatever the verdict
    assert result["unlabelled_tp"] == ["o/r:train.py:30:TL301"]
    assert "TL001" not in result["per_rule"] and [f["path"] for f in result["not_linted"]] == ["broken.py"]
    assert result["labels_outside_corpus"] == ["o/r:train.py"]
    assert not result["unjudged"]


def test_table_totals_and_recall_text(tmp_path):
    labels_file(tmp_path, "o/r", {"a.py": {"hazards": [{"line": 1, "code": "TL101", "why": "w"},
                                                      {"line": 2, "code": "TL101", "why": "w"},
                                                      {"line": 3, "code": "TL301", "why": "w"}]}})
    findings = [finding("o/r", "a.py", 1, "TL101"), finding("o/r", "a.py", 3, "TL301"),
                finding("o/r", "b.py", 9, "TL301")]
    judgements = {"o/r:b.py:9:TL301": {"verdict": "FP", "why": "w"}}
    result = tc.score(findings, judgements, tc.load_labels(tmp_path))
    rows = {row[0]: row for row in tc.table_rows(result)}
    assert rows["TL101"][1:] == ["1", "1", "0", "0", "0", "1/2 (50%)", "0/0"]
    assert rows["TL301"][1:] == ["2", "1", "1", "0", "0", "1/1 (100%)", "0/0"]
    assert rows["all"][1:] == ["3", "2", "1", "0", "0", "2/3 (67%)", "0/0"]
    markdown = tc.render(result, markdown=True)
    assert "| **all** | **3** | **2** | **1** |" in markdown
    assert "`o/r:a.py:2:TL101`" in markdown


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_materialise_writes_pinned_files_and_names_what_is_not_fetched(tmp_path, capsys):
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

    def git(*args):
        return subprocess.run(["git", "-C", str(work), *args], check=True, capture_output=True,
                              text=True, env=env).stdout.strip()

    git("init", "-q")
    (work / "train.py").write_text("old = 1\n")
    git("add", "train.py")
    git("commit", "-qm", "first")
    pinned = git("rev-parse", "HEAD")
    (work / "train.py").write_text("new = 2\n")
    git("commit", "-qam", "second")
    mirror = tmp_path / "mirror"
    (mirror / "o+r").mkdir(parents=True)
    shutil.copytree(work / ".git", mirror / "o+r" / "repo")  # a bare git directory, as fetch brings
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"repos": [
        {"repo": "o/r", "commit": pinned, "kind": "tutorial", "files": ["train.py"]},
        {"repo": "x/absent", "commit": "1" * 40, "kind": "research", "files": ["a.py"]}]}))
    code = tc.main(["--corpus", str(corpus), "materialise", "--cache", str(tmp_path / "cache"),
                    "--mirror", str(mirror)])
    assert code == 1
    assert (tmp_path / "cache" / "training" / "o+r" / "train.py").read_text() == "old = 1\n"
    err = capsys.readouterr().err
    assert "not fetched" in err and "github:x/absent" in err and "Traceback" not in err


def test_run_refuses_a_corpus_that_is_not_materialised(tmp_path, capsys):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"repos": [{"repo": "o/r", "commit": "0" * 40, "kind": "tutorial",
                                             "files": ["train.py"]}]}))
    code = tc.main(["--corpus", str(corpus), "run", "--cache", str(tmp_path), "--out", str(tmp_path / "f.json")])
    assert code == 2
    assert "run materialise first" in capsys.readouterr().err


def test_the_committed_corpus_labels_and_judgements_fit_together():
    repos = tc.load_corpus()
    files = {(r["repo"], p) for r in repos for p in r["files"]}
    assert len(repos) >= 20 and len(files) >= 300
    assert all(len(r["commit"]) == 40 and r["kind"] in ("tutorial", "research") for r in repos)
    commits = {r["repo"]: r["commit"] for r in repos}
    for label_file in tc.LABELS_DIR.glob("*.json"):
        data = json.loads(label_file.read_text())
        assert data["commit"] == commits[data["repo"]], label_file.name
        for path, entry in data["files"].items():
            assert (data["repo"], path) in files, f"{data['repo']}:{path} is labelled but not in the corpus"
            for hazard in entry["hazards"]:
                assert hazard["code"].startswith("TL") and hazard["line"] >= 1 and hazard["why"]
                assert ("cell" in hazard) == path.endswith(".ipynb"), f"{path}: cell only for notebooks"
    judgements = json.loads(tc.JUDGEMENTS_FILE.read_text())
    assert all(v["verdict"] in tc.VERDICTS and v["why"] for v in judgements.values())


def _mirrors_present() -> bool:
    return all(tc.git_dir(tc.DEFAULT_MIRROR, r["repo"]) for r in tc.load_corpus())


@pytest.mark.slow
@pytest.mark.skipif(not _mirrors_present(), reason="the training corpus's git mirrors are not on this machine")
def test_every_finding_on_the_real_training_corpus_is_judged(tmp_path):
    """A rule change that adds a finding must come with its verdict in judgements.json."""
    cache = tmp_path / "cache"
    assert tc.main(["materialise", "--cache", str(cache)]) == 0
    out = tmp_path / "findings.json"
    assert tc.main(["run", "--cache", str(cache), "--pythonpath", str(ROOT / "src"), "--select", "TL",
                    "--python", sys.executable, "--out", str(out)]) == 0
    findings = json.loads(out.read_text())["findings"]
    judgements = json.loads(tc.JUDGEMENTS_FILE.read_text())
    result = tc.score(findings, judgements, tc.load_labels(tc.LABELS_DIR))
    assert not result["unjudged"], "judge these in bench/training/judgements.json:\n" + "\n".join(
        f["key"] for f in result["unjudged"])


# The companion corpus of distributed and torch.compile scripts (docs/real-world.md, "Distributed
# training and torch.compile"): measured for the rules of those families only.
DISTRIBUTED_CORPUS = tc.TRAINING / "distributed_corpus.json"
DISTRIBUTED_CODES = "TL508,TL509,TL901,TL902,TL903,TL904"


def test_the_distributed_corpus_is_pinned_apart_from_the_training_corpus():
    repos = tc.load_corpus(DISTRIBUTED_CORPUS)
    assert len(repos) >= 20 and sum(len(r["files"]) for r in repos) >= 200
    assert all(len(r["commit"]) == 40 and r["kind"] in ("tutorial", "research") and r["files"] for r in repos)
    # a repository in both would give two pinned versions of one finding key
    assert not {r["repo"] for r in repos} & {r["repo"] for r in tc.load_corpus()}


@pytest.mark.slow
@pytest.mark.skipif(not all(tc.git_dir(tc.DEFAULT_MIRROR, r["repo"]) for r in tc.load_corpus(DISTRIBUTED_CORPUS)),
                    reason="the distributed corpus's git mirrors are not on this machine")
def test_every_distributed_and_compile_finding_on_the_distributed_corpus_is_judged(tmp_path):
    cache = tmp_path / "cache"
    corpus = ["--corpus", str(DISTRIBUTED_CORPUS)]
    assert tc.main([*corpus, "materialise", "--cache", str(cache)]) == 0
    out = tmp_path / "findings.json"
    assert tc.main([*corpus, "run", "--cache", str(cache), "--pythonpath", str(ROOT / "src"),
                    "--select", DISTRIBUTED_CODES, "--python", sys.executable, "--out", str(out)]) == 0
    findings = json.loads(out.read_text())["findings"]
    result = tc.score(findings, json.loads(tc.JUDGEMENTS_FILE.read_text()), {})
    assert not result["unjudged"], "judge these in bench/training/judgements.json:\n" + "\n".join(
        f["key"] for f in result["unjudged"])
    assert result["per_rule"]["TL902"]["TP"] >= 4


def test_score_reads_only_the_labels_of_the_corpus_it_scores(tmp_path, capsys):
    labels_file(tmp_path / "labels", "o/r", {"train.py": {"hazards": [{"line": 10, "code": "TL101", "why": "w"}]}})
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"repos": [{"repo": "x/other", "commit": "0" * 40, "kind": "research",
                                             "files": ["ddp.py"]}]}))
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps({"findings": [finding("x/other", "ddp.py", 3, "TL902")]}))
    judgements = tmp_path / "judgements.json"
    judgements.write_text(json.dumps({"x/other:ddp.py:3:TL902": {"verdict": "TP", "why": "w"}}))
    assert tc.main(["--corpus", str(corpus), "score", str(findings), "--judgements", str(judgements),
                    "--labels", str(tmp_path / "labels")]) == 0
    out = capsys.readouterr().out
    assert "labelled files: 0" in out and "o/r" not in out and "missed" not in out


def test_score_of_named_repositories_leaves_the_others_out(tmp_path, capsys):
    labels_file(tmp_path / "labels", "o/r", {"train.py": {"hazards": [{"line": 10, "code": "TL101", "why": "w"}]}})
    labels_file(tmp_path / "labels", "x/new", {"rl.py": {"hazards": [{"line": 4, "code": "TL101", "why": "w"}]}})
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"repos": [
        {"repo": "o/r", "commit": "0" * 40, "kind": "research", "files": ["train.py"]},
        {"repo": "x/new", "commit": "1" * 40, "kind": "research", "files": ["rl.py"]}]}))
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps({"findings": [finding("o/r", "train.py", 3, "TL505"),
                                                 finding("x/new", "rl.py", 4, "TL101")]}))
    args = ["--corpus", str(corpus), "score", str(findings), "--judgements", str(tmp_path / "none.json"),
            "--labels", str(tmp_path / "labels")]
    assert tc.main(args + ["--repo", "x/new"]) == 0
    out = capsys.readouterr().out
    # the other repository's unjudged finding and its missed label are not counted
    assert "labelled files: 1" in out and "o/r" not in out and "1/1 (100%)" in out
    assert tc.main(args + ["--repo", "x/gone"]) == 2
    assert "x/gone" in capsys.readouterr().err


def test_the_benchmarks_read_the_corpus_files_only(tmp_path):
    # The distributed corpus materialises into the same folder, and a file the corpus
    # dropped stays there: the 881 "training" files benchmarked before were 651 of these.
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({"repos": [
        {"repo": "o/r", "commit": "1" * 40, "kind": "tutorial", "files": ["b/train.py", "a.ipynb", "gone.py"]}]}))
    root = tmp_path / "training"
    for rel in ("o+r/b/train.py", "o+r/a.ipynb", "o+r/dropped.py", "d+ddp/main.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"# {rel}\n")
    assert tc.corpus_files(root, corpus) == [root / "o+r/a.ipynb", root / "o+r/b/train.py"]
    copies = tc.copy_corpus(root, tmp_path / "copy", corpus)
    assert sorted(p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*.*")) == \
        ["o+r/a.ipynb", "o+r/b/train.py"]
    assert copies[1].read_text() == "# o+r/b/train.py\n"
