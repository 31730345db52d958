"""The generated part of docs/comparison.md, from the reports of ``bench/compare.py`` in docs/comparison/.

A report is one run of the script on one machine: what each tool offers (probed on two small
files the script writes) and what it found, in how long, on the training corpus. Every figure
and every measured cell of the feature table is read from a report. The other cells of that
table are cited: ``CITED`` holds each with the public page it comes from, and the page shows
the link beside the text.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from torchlint.measured import cell, read_json

COMPARISON_DIR = Path("docs/comparison")

# The feature table's columns: the report's tool key for each, in order.
COLUMNS: Tuple[Tuple[str, str], ...] = (
    ("torchlint", "torchlint"), ("torchfix", "TorchFix"), ("torch-preflight", "torch-preflight"),
    ("dslinter", "dslinter"), ("pylint-ml", "pylint-ml"), ("ruff", "ruff"), ("pylint", "pylint"),
)

_PREFLIGHT = "https://github.com/highwaterlabs/torch-preflight/blob/774b8396f8d4d6e3fe55301781ef2e557fbf11f2"
_TORCHFIX = "https://github.com/pytorch-labs/torchfix/blob/0ee382c8bc4d9388fe08d42c8963fba53b73273b"
_DSLINTER = "https://github.com/SERG-Delft/dslinter/blob/ba4e5102438a9cdd51f3ae01f1b08a0de7ed82aa"
_PYLINT_ML = "https://github.com/pylint-dev/pylint-ml/blob/d46da888309464f7f4b7396a00667e5c2cd6d1ef"
_PYLINT = "https://github.com/pylint-dev/pylint/blob/27e33faa1d4f373600ed143b200714ce1d9d7bbe"

# Cells the script cannot measure, each as its source says it: row -> tool key -> (text, link).
CITED: Dict[str, Dict[str, Tuple[str, str]]] = {
    "Editor integration (as its documentation describes it)": {
        "torchlint": ("language server (VS Code, Neovim, Helix, JupyterLab), flake8, stdin", "editors.md"),
        "torchfix": ("through flake8: \"a Flake8 plugin (linting only) or a standalone program\"",
                     f"{_TORCHFIX}/README.md#L13-L14"),
        "torch-preflight": ("none yet: notebooks, an LSP server and a flake8 shim are listed as ideas",
                            f"{_PREFLIGHT}/design/IDEAS.md#L101-L103"),
        "dslinter": ("none of its own: it runs inside pylint (`--load-plugins=dslinter`)",
                     f"{_DSLINTER}/README.md#L31-L36"),
        "pylint-ml": ("none described: its README is three lines", f"{_PYLINT_ML}/README.rst"),
        "ruff": ("`ruff server`, a language server, with set-up guides per editor",
                 "https://docs.astral.sh/ruff/editors/"),
        "pylint": ("tutorials for 18 editors and IDEs, a VS Code extension",
                   f"{_PYLINT}/doc/user_guide/installation/ide_integration/index.rst"),
    },
    "Runtime evidence (a rule's claim measured by running code)": {
        "torchlint": ("every rule's fixture pair run on CPU and CUDA, with a verdict", "evidence.md"),
        "torchfix": ("none described in its README", f"{_TORCHFIX}/README.md"),
        "torch-preflight": ("VRAM projections checked against measured peaks on a T4 (3.7% mean absolute "
                            "error); TG001's two shapes measured on an MLP", f"{_PREFLIGHT}/README.md#L116-L126"),
        "dslinter": ("none described in its README", f"{_DSLINTER}/README.md"),
        "pylint-ml": ("none described in its README", f"{_PYLINT_ML}/README.rst"),
        "ruff": ("not its subject: general Python rules", "https://docs.astral.sh/ruff/linter/"),
        "pylint": ("not its subject: general Python messages",
                   "https://github.com/pylint-dev/pylint/blob/f80c5411ec5a39a6cd94bff2ca77fbcd1db3f892/"
                   "doc/user_guide/messages/messages_overview.rst"),
    },
    "Rule families (its own rule list)": {
        "torchlint": ("grad mode, optimizer steps, graph retention, leaves, autograd API, throughput, "
                      "torch API currency (TL1-TL7)", "rules/index.md"),
        "torchfix": ("removed and deprecated torch functions, the `require_grad` typo, `use_reentrant`, "
                     "`weights_only` (TOR0, TOR1); TorchVision (TOR2); noisy opt-in rules (TOR4)",
                     f"{_TORCHFIX}/README.md#L56-L65"),
        "torch-preflight": ("graph retention, missing no_grad and zero_grad, DataLoader, loss/activation pairing, "
                            "GPU syncs, seeding, projected OOM, eval/train, DDP sampler, repeated transfers, "
                            "gradient accumulation (13 rules)", f"{_PREFLIGHT}/docs/rules.md"),
        "dslinter": ("import names, pandas, NumPy, scikit-learn, TensorFlow and PyTorch smells "
                     "(hyperparameters, seeding, DataLoader seeding, masks, `forward`, zero_grad)",
                     f"{_DSLINTER}/README.md#L99-L161"),
        "pylint-ml": ("NumPy, pandas, SciPy, scikit-learn, TensorFlow imports and parameters, "
                      "torch parameters", f"{_PYLINT_ML}/pylint_ml/plugin.py"),
        "ruff": ("Flake8 and its plugins, isort, pydocstyle, pyupgrade, autoflake and more",
                 "https://docs.astral.sh/ruff/linter/"),
        "pylint": ("general Python: errors, warnings, refactoring and conventions",
                   "https://github.com/pylint-dev/pylint/blob/f80c5411ec5a39a6cd94bff2ca77fbcd1db3f892/"
                   "doc/user_guide/messages/messages_overview.rst"),
    },
    "Maintained or archived": {
        "torchlint": ("this repository", "../CHANGELOG.md"),
        "torchfix": ("archived: PyTorch dropped it from its CI, \"archived now\" (January 2026)",
                     "https://github.com/pytorch/pytorch/pull/173736"),
        "torch-preflight": ("releases 0.1.0 to 0.4.0 from 2026-08-13 to 2026-08-18", f"{_PREFLIGHT}/CHANGELOG.md"),
        "dslinter": ("newest commit 2022-07-06",
                     "https://github.com/SERG-Delft/dslinter/commit/ba4e5102438a9cdd51f3ae01f1b08a0de7ed82aa"),
        "pylint-ml": ("one release (0.0.1, \"Development Status :: 3 - Alpha\"); newest commit 2025-02-24",
                      f"{_PYLINT_ML}/pyproject.toml#L3-L9"),
        "ruff": ("weekly releases (0.16.0 to 0.16.4 from 2026-07-23 to 2026-08-20); newest commit 2026-08-22",
                 "https://github.com/astral-sh/ruff/commit/fca5c7cf2cd2f8338f18b9485f936b8e9f07bd0b"),
        "pylint": ("releases 4.0.5 to 4.0.7 from 2026-02-20 to 2026-08-09; newest commit 2026-08-22",
                   "https://github.com/pylint-dev/pylint/commit/3a99b2d728d0c8ff5267e0c38ebad4f5ba228dac"),
    },
}


def load_comparisons(root: Path) -> List[Tuple[str, Dict[str, Any]]]:
    """[(file stem, report)] of every report in docs/comparison/, by name."""
    reports = []
    for path in sorted((root / COMPARISON_DIR).glob("*.json")):
        report = read_json(path, "a report of bench/compare.py")
        if not isinstance(report.get("tools"), dict) or "machine" not in report or "command" not in report:
            raise SystemExit(f"torchlint.docs: {path} is not a report of bench/compare.py "
                             "(no tools, machine or command)")
        reports.append((path.stem, report))
    return reports


def _link(text: str, url: str) -> str:
    return f"{cell(text)} ([source]({url}))"


def _features(report: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    tool = report["tools"].get(name)
    return tool.get("features") if tool and tool.get("status") == "ran" else None


def _not_measured(report: Dict[str, Any], name: str) -> str:
    tool = report["tools"].get(name)
    if tool is None:
        return "not in this run"
    return "not measured: it did not run (below)"


def _installed(report: Dict[str, Any], name: str) -> str:
    tool = report["tools"].get(name)
    if tool is None:
        return "not in this run"
    newest = f"; newest on the package index: {tool['newest_on_index']}" if tool.get("newest_on_index") else ""
    if tool["status"] == "ran":
        return f"yes, Python {tool.get('python')}{newest}"
    if tool.get("versions"):
        return f"installs, does not run (below){newest}"
    return f"no (below){newest}"


def _flake8(features: Dict[str, Any]) -> str:
    points = features["flake8_plugin"]["entry_points"]
    return f"yes (`{', '.join(points)}` codes)" if points else "no"


def _server(features: Dict[str, Any]) -> str:
    server = features["language_server"]
    if not server.get("command"):
        return "no server command in its `--help`"
    if server.get("answers_initialize"):
        return f"yes (`{server['command']}` answers `initialize`)"
    return f"`{server['command']}` in its `--help`, but no answer to `initialize`"


def _notebooks(features: Dict[str, Any]) -> str:
    probe = features["notebooks"]
    if not probe["py_findings"]:
        return "not measured: no finding on the `.py` probe"
    counts = f"{probe['same_line_and_code']} of the `.py` file's {probe['py_findings']} findings"
    return f"yes ({counts})" if probe["reads_notebooks"] else f"no ({counts})"


def _fix(features: Dict[str, Any]) -> str:
    fix = features["fix"]
    if not fix["fix_option"]:
        return "no `--fix` in its `--help`"
    if not fix["rewrote"]:
        return "`--fix` changed nothing in the probe"
    lines = len(fix["lines_changed"])
    return (f"yes ({lines} line{'s' if lines != 1 else ''} rewritten, still parses)" if fix["parses_after"]
            else "`--fix` left code that does not parse")


MEASURED_ROWS = (
    ("Installs and runs here (`bench/compare.py`)", None),
    ("flake8 plugin (a `flake8.extension` entry point of its distribution)", _flake8),
    ("Language server (a server command in `--help` that answers LSP `initialize`)", _server),
    ("Reads notebooks (a one-cell notebook gets the findings of the same code in a `.py` file, same lines)",
     _notebooks),
    ("Autofix (`--fix` rewrites the probe file, which still parses)", _fix),
)


def _feature_table(report: Dict[str, Any]) -> List[str]:
    head = ["", *(label for _, label in COLUMNS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for title, render in MEASURED_ROWS:
        cells = []
        for name, _ in COLUMNS:
            if render is None:
                cells.append(_installed(report, name))
                continue
            features = _features(report, name)
            cells.append(render(features) if features else _not_measured(report, name))
        lines.append(f"| {cell(title)} (measured) | " + " | ".join(cell(c) for c in cells) + " |")
    for title, cited in CITED.items():
        cells = [_link(*cited[name]) for name, _ in COLUMNS]
        lines.append(f"| {cell(title)} (cited) | " + " | ".join(cells) + " |")
    return lines


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _versions(tool: Dict[str, Any]) -> str:
    return ", ".join(f"{name} {version}" for name, version in sorted(tool.get("versions", {}).items()))


def _run_table(report: Dict[str, Any], kind: str) -> List[str]:
    runs = [(name, tool, tool["runs"][kind]) for name, tool in report["tools"].items()
            if tool.get("status") == "ran" and kind in tool.get("runs", {})]
    if not runs:
        return []
    reference = next((run for name, _, run in runs if name == "torchlint"), None)
    head = ["tool", "installed", "findings", "files with findings", "codes", "parse errors (files)",
            "files checked, its own count", "wall s", "CPU s", "exit", "wall ÷ torchlint's", "CPU ÷ torchlint's"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    for name, tool, run in runs:
        ratio_wall = ratio_cpu = "—"
        if reference is not None and name != "torchlint":
            ratio_wall = f"{run['wall_s'] / reference['wall_s']:.1f}×"
            ratio_cpu = f"{run['cpu_s'] / reference['cpu_s']:.1f}×" if reference["cpu_s"] else "—"
        own = run.get("tool_reported_files_checked")
        lines.append("| " + " | ".join(cell(c) for c in (
            tool["label"], _versions(tool), f"{run['findings']:,}", str(run["files_with_findings"]),
            str(len(run["by_code"])), f"{run['parse_errors']} ({run['files_with_parse_errors']})",
            "not printed" if own is None else str(own), _seconds(run["wall_s"]), _seconds(run["cpu_s"]),
            str(run["exit_code"]), ratio_wall, ratio_cpu)) + " |")
    return lines


_SHOWN_CODES = 12


def _codes(report: Dict[str, Any]) -> List[str]:
    lines = ["| tool | files | findings by code |", "|---|---|---|"]
    for tool in report["tools"].values():
        for kind, run in tool.get("runs", {}).items():
            items = list(run["by_code"].items())
            shown = ", ".join(f"{code} {count:,}" for code, count in items[:_SHOWN_CODES])
            rest = items[_SHOWN_CODES:]
            if rest:
                shown += f"; {_plural(len(rest), 'more code')}, {_plural(sum(c for _, c in rest), 'finding')}"
            lines.append(f"| {cell(tool['label'])} | `.{kind}` | {cell(shown or 'none')} |")
    return lines


_WITH_PARTNER = "of them, with one of those on the line"


def _overlaps(report: Dict[str, Any]) -> List[str]:
    lines: List[str] = []
    against = report["tools"].get(report.get("overlaps_against", ""), {}).get("label", "torchlint")
    for name, found in report.get("overlaps", {}).items():
        label = cell(report["tools"][name]["label"])
        lines += [f"**{label}** beside {cell(against)}, on the files {label} checked (lines, not findings: "
                  "a tool may report one line twice):", "",
                  f"| {label} code | lines it reports | torchlint codes that answer it | {_WITH_PARTNER} |",
                  "|---|---:|---|---:|"]
        for code, entry in found["peer_codes"].items():
            answer = ", ".join(entry["answered_by"]) or "none"
            lines.append(f"| {code} | {entry['lines']} | {answer} | {entry['lines_with_partner']} |")
        if not found["peer_codes"]:
            lines.append("| (no line of a code with a torchlint answer) | 0 | | |")
        lines += ["", f"| torchlint code | lines it reports | {label} codes it answers | {_WITH_PARTNER} |",
                  "|---|---:|---|---:|"]
        for code, entry in found["torchlint_codes"].items():
            answers = ", ".join(entry["answers"])
            lines.append(f"| {code} | {entry['lines']} | {answers} | {entry['lines_with_partner']} |")
        if not found["torchlint_codes"]:
            lines.append("| (none) | 0 | | |")
        lines.append("")
    return lines


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _in_short(report: Dict[str, Any]) -> List[str]:
    """The run's headline figures, each read from the report."""
    tools = report["tools"]
    ran = {name: tool for name, tool in tools.items() if tool.get("status") == "ran"}
    lines = []
    reference = ran.get("torchlint", {}).get("runs", {}).get("py")
    if reference:
        others = [f"{cell(tool['label'])} {tool['runs']['py']['wall_s'] / reference['wall_s']:.1f}× "
                  f"({tool['runs']['py']['cpu_s'] / reference['cpu_s']:.1f}× CPU)"
                  for name, tool in ran.items() if name not in ("torchlint", "torchlint-all") and "py" in tool["runs"]]
        lines.append(f"- On the same {report['corpus']['files'].get('py', 0)} `.py` files, torchlint (default rules) "
                     f"took {_seconds(reference['wall_s'])} s ({_seconds(reference['cpu_s'])} s CPU); the others took, "
                     f"in wall time against torchlint's: {', '.join(others)}.")
    readers = [cell(tool["label"]) for tool in ran.values() if tool["features"]["notebooks"]["reads_notebooks"]]
    non_readers = [cell(tool["label"]) for tool in ran.values() if not tool["features"]["notebooks"]["reads_notebooks"]]
    lines.append(f"- Notebooks ({report['corpus']['files'].get('ipynb', 0)} in the corpus): read by "
                 f"{', '.join(readers) or 'none'}; not by {', '.join(non_readers) or 'none'} (probe).")
    failed = [cell(tool["label"]) for tool in tools.values() if tool.get("status") != "ran"]
    if failed:
        lines.append(f"- Could not run here: {', '.join(failed)} (why: below).")
    return lines


def _provenance(stem: str, report: Dict[str, Any]) -> List[str]:
    machine, corpus = report["machine"], report["corpus"]
    files = corpus.get("files", {})
    where = (f"the training corpus ([`{corpus['definition']}`](../{corpus['definition']}): "
             f"{len(corpus.get('repositories', []))} public repositories, each pinned by commit)"
             if corpus.get("name") == "training" else cell(corpus.get("name", "?")))
    loads = [run["other_load_cores"] for tool in report["tools"].values() for run in tool.get("runs", {}).values()
             if run.get("other_load_cores") is not None]
    return [
        f"- Command: `{report['command']}`, {report['date']} ([`comparison/{stem}.json`](comparison/{stem}.json)).",
        f"- Machine: {cell(machine.get('cpu', '?'))}, {machine.get('cores')} cores, {machine.get('mem_gib')} GiB, "
        f"Python {machine.get('python')}, {cell(machine.get('os', '?'))}.",
        f"- torchlint {report['torchlint']['version']} at commit `{report['torchlint']['commit']}`.",
        f"- Files: {where}; {files.get('py', 0)} `.py` files and {files.get('ipynb', 0)} notebooks.",
        *([f"- Each tool ran {report['repeat']} times over each set of files; the times shown are its fastest "
           "run's (the report has every run's), and every run gave the same findings."
           if all(run.get("same_findings_every_run", True) for tool in report["tools"].values()
                  for run in tool.get("runs", {}).values())
           else f"- Each tool ran {report['repeat']} times; the times shown are its fastest run's. Some runs "
           "differed in their findings: see `same_findings_every_run` in the report."]
          if report.get("repeat", 1) > 1 else []),
        *([f"- Other processes kept {min(loads):.1f} to {max(loads):.1f} cores busy during the runs: "
           "compare CPU seconds where that is high."] if loads else []),
    ]


def _not_run(report: Dict[str, Any]) -> List[str]:
    lines = []
    for tool in report["tools"].values():
        if tool.get("status") != "ran":
            installed = f" (installed: {_versions(tool)})" if tool.get("versions") else ""
            lines.append(f"- **{cell(tool['label'])}**{installed}: {cell(tool.get('why', tool['status']))}")
    return lines


def _report_section(stem: str, report: Dict[str, Any]) -> List[str]:
    files = report["corpus"].get("files", {})
    lines = ["### In short", "", *_in_short(report), "",
             "### Where these figures come from", "", *_provenance(stem, report), "",
             "### Features", "", *_feature_table(report), ""]
    py = _run_table(report, "py")
    if py:
        lines += [f"### The same {files.get('py', 0)} `.py` files, every tool", "", *py, ""]
    notebooks = _run_table(report, "ipynb")
    if notebooks:
        lines += [f"### The {files.get('ipynb', 0)} notebooks, the tools the probe saw reading them", "",
                  *notebooks, ""]
    lines += ["### Findings by code", "", *_codes(report), ""]
    overlaps = _overlaps(report)
    if overlaps:
        lines += ["### Where a peer's finding has a torchlint answer", "", *overlaps]
    not_run = _not_run(report)
    if not_run:
        lines += ["### Could not run", "", *not_run, ""]
    return lines


def comparison_results(root: Path) -> str:
    """The generated part of docs/comparison.md: one section per report."""
    reports = load_comparisons(root)
    if not reports:
        return "No report yet: run `python bench/compare.py --json docs/comparison/<machine>.json`."
    lines: List[str] = []
    for stem, report in reports:
        if len(reports) > 1:
            lines += [f"## {cell(report['machine'].get('cpu', stem))}", ""]
        lines += _report_section(stem, report)
    return "\n".join(lines)
