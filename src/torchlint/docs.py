"""Generated documentation: rule pages, rule tables and runtime evidence.

    python -m torchlint.docs            # rewrite everything generated (charts when stale)
    python -m torchlint.docs --check    # list what is stale, exit 1 if anything is

Written from two sources, each the only place its facts live:

* the rule modules (``src/torchlint/rules/``): ``docs/rules/TLxxx.md``,
  ``docs/rules/index.md``, the rule table in ``README.md`` and
  ``src/torchlint/catalogue.py`` (codes, names, defaults: what config and a
  cached run read without importing the rules);
* the harness reports (``docs/evidence/*.json``, one per device, written by
  ``fixtures/harness.py --json``): the Evidence section of every rule page, the
  results in ``docs/evidence.md``, the charts in ``docs/evidence/charts/`` and
  ``src/torchlint/evidence.json``, the measured lines that ship with the
  package so that ``torchlint rule TL301`` shows them without the repository.

Tables embedded in hand-written files go between marker comments
(``<!-- rules-table:start -->`` / ``<!-- rules-table:end -->``). Charts need
matplotlib (``pip install 'torchlint[docs]'``); nothing else here does, and
the linter never imports torch.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import statistics
import sys
import textwrap
from pathlib import Path
from typing import Any, List, Optional

from torchlint import measured
from torchlint.claims_page import claims_results
from torchlint.comparison_page import comparison_results
from torchlint.measured import (
    EVIDENCE_DIR,
    HARNESS,
    cell,
    chart_path,
    device_kind,
    device_label,
    evidence_from_reports,
    evidence_section,
    harness_command,
    load_more_runs,
    load_reports,
    load_scale_reports,
    measured_line,
    packaged_evidence,
    status_text,
    verdict_word,
)
from torchlint.rules import ALL_RULES

_FIX = {"none": "no automatic fix", "safe": "safe fix", "unsafe": "unsafe fix (needs --unsafe-fixes)"}

# Where the generated files live, relative to the repository root.
RULE_PAGES = Path("docs/rules")
EVIDENCE_PAGE = Path("docs/evidence.md")
CLAIMS_PAGE = Path("docs/claims.md")
COMPARISON_PAGE = Path("docs/comparison.md")
FIXTURES_PAGE = Path("fixtures/README.md")
README = Path("README.md")
PACKAGED = Path("src/torchlint/evidence.json")
CATALOGUE = Path("src/torchlint/catalogue.py")

# The first line of a rule's "Fix safety" section: what applies the fix.
_SAFETY_NOTE = {
    "none": (
        "There is no automatic fix: the right change depends on what the code means "
        "to do. *Use instead* shows the usual one."
    ),
    "safe": "This fix is **safe**: `torchlint check --fix` applies it.",
    "unsafe": (
        "This fix is **unsafe**: it may change what the program does, so only "
        "`torchlint check --fix --unsafe-fixes` applies it (`--diff` shows it first)."
    ),
}
_FIX_HEADING = "## Fix safety"


# -- rule pages ---------------------------------------------------------------------------

def render(rule, evidence: Optional[dict] = None) -> str:
    """A rule's page; ``evidence`` defaults to the measurements shipped with the package."""
    status = "on by default" if rule.default else "opt-in (enable with extend-select)"
    head = (
        f"# {rule.code}: {rule.name}\n\n"
        f"**Status:** {status} · **Fix:** {_FIX[rule.fix_safety]}\n\n"
        f"Message: `{rule.code} {rule.message}`\n"
    )
    evidence = evidence if evidence is not None else packaged_evidence()
    entries = evidence.get("rules", {}).get(rule.code, [])
    # the measured verdict up front: `torchlint rule` users read the top of the page
    head += "".join(f"\n{measured_line(entry)}\n" for entry in entries)
    body = fix_safety_section(rule, textwrap.dedent(rule.docs).rstrip())
    evidence_text = evidence_section(entries, evidence.get("scale", {}).get(rule.code, []))
    return head + body + "\n\n" + torch_version_section(rule) + "\n\n" + evidence_text


_TORCH_VERSION_HEADING = "## Torch version"
_VERSION_INDEPENDENT = (
    "The target torch version (`target-torch-version`, docs/configuration.md) does not change "
    "what this rule reports."
)


def torch_version_section(rule) -> str:
    """How the target torch version changes the rule (its ``torch_version`` paragraph),
    or the one line saying it does not."""
    text = textwrap.dedent(rule.torch_version).strip() or _VERSION_INDEPENDENT
    return f"{_TORCH_VERSION_HEADING}\n{text}"


def fix_safety_section(rule, body: str) -> str:
    """Give every rule a "Fix safety" section that opens with how (or whether) a fix is applied.

    The rule's own section (what the fix does, why it is safe or unsafe)
    follows the note; a rule that wrote none gets the note alone, at the end.
    """
    note = _SAFETY_NOTE.get(rule.fix_safety)
    if note is None:
        return body
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if line.strip() == _FIX_HEADING:
            return "\n".join(lines[: index + 1] + [note, ""] + lines[index + 1:])
    return body + "\n\n" + f"{_FIX_HEADING}\n{note}"


def _finds(rule) -> str:
    """The message's first clause, cut before its explanation (": ", ", so ", ", which ")."""
    summary = rule.message.split(";")[0]
    for cut in (": ", ", so ", ", which "):
        summary = summary.split(cut)[0]
    return summary if rule.default else f"opt-in: {summary}"


def render_index(evidence: dict) -> str:
    lines = [
        "# Rules\n",
        "Generated from `src/torchlint/rules/` and `docs/evidence/*.json`; run `python -m torchlint.docs` "
        "after editing a rule or running the harness.\n",
        "| code | name | default | what it finds | CPU evidence | CUDA evidence |",
        "|---|---|---|---|---|---|",
    ]
    for rule in ALL_RULES:
        entries = evidence.get("rules", {}).get(rule.code, [])
        default = "yes" if rule.default else "opt-in"
        lines.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {default} | {rule.message.split(';')[0]} "
                     f"| {verdict_word(entries, 'CPU')} | {verdict_word(entries, 'CUDA')} |")
    return "\n".join(lines) + "\n"


def rules_table() -> str:
    """The README's rule table (links into docs/rules/)."""
    lines = ["| code | name | finds |", "|---|---|---|"]
    for rule in ALL_RULES:
        lines.append(f"| [{rule.code}](docs/rules/{rule.code}.md) | {rule.name} | {_finds(rule)} |")
    return "\n".join(lines)


def fixtures_table(root: Path) -> str:
    """fixtures/README.md's table: each rule's fixture folder and what its bad.py holds (its docstring's
    first line), so a rule added with its fixture is listed the moment the docs are generated."""
    lines = ["| folder | rule | `bad.py` holds |", "|---|---|---|"]
    for rule in ALL_RULES:
        folders = sorted((root / "fixtures").glob(f"{rule.code}_*/bad.py"))
        if not folders:
            raise SystemExit(f"torchlint.docs: {rule.code} has no fixtures/{rule.code}_<slug>/bad.py")
        bad = folders[0]
        summary = (ast.get_docstring(ast.parse(bad.read_text(encoding="utf-8"))) or "").split("\n")[0]
        summary = re.sub(r"^TL\d+ \([^)]*\):\s*", "", summary)
        opt_in = "" if rule.default else " (opt-in)"
        lines.append(f"| [`{bad.parent.name}/`]({bad.parent.name}/) | [{rule.code}](../docs/rules/{rule.code}.md) "
                     f"{rule.name}{opt_in} | {cell(summary)} |")
    return "\n".join(lines)


# -- docs/evidence.md ---------------------------------------------------------------------

def evidence_results(reports: list, evidence: dict) -> str:
    """Every rule's verdict on every device, then one results table per device report."""
    rules = evidence.get("rules", {})
    header = ["rule"] + [f"{device_label(report)}, torch {report.get('torch')}" for _, report in reports]
    lines = ["## Verdicts by device", "", "| " + " | ".join(cell(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    for code in sorted(rules):
        lines.append(f"| [{code}](rules/{code}.md) | " + " | ".join(verdict_word([e], e["device_kind"]) for e in rules[code]) + " |")
    blocks = ["\n".join(lines)] + [_report_block(index, stem, report, rules) for index, (stem, report)
                                   in enumerate(reports)]
    if not any(report.get("device") == "cuda" for _, report in reports):
        blocks.append(
            "## Results: CUDA\n\n**No CUDA numbers exist yet.** The CUDA code path "
            "(`--device cuda`, verdicts from `torch.cuda.memory_allocated()`) has not been run for "
            f"this page. On a GPU: `python {HARNESS} --device cuda --json docs/evidence/<gpu>.json`, then "
            "`python -m torchlint.docs`.")
    return "\n\n".join(blocks)


def _load_text(report: dict) -> str:
    load = report.get("load_average_1min")
    return "" if load is None else f", load average {load:g} when it started (times are noisy on a busy machine)"


def _report_block(index: int, stem: str, report: dict, rules: dict) -> str:
    """``index``: the report's place in every rule's list of entries."""
    lines = [
        f"## Results: {device_kind(report)} (`{EVIDENCE_DIR.as_posix()}/{stem}.json`)", "",
        f"{device_label(report)}, torch {report.get('torch')}, Python {report.get('python')}, "
        f"{report.get('iterations')} iterations{_load_text(report)}. Command: "
        f"`{harness_command(report, json_out=(EVIDENCE_DIR / (stem + '.json')).as_posix())}`.", "",
        "| rule | metric | bad | good | verdict |", "|---|---|---|---|---|",
    ]
    for code, rule in sorted(report["rules"].items()):
        for m in rule.get("metrics", []):
            lines.append(f"| [{code}](rules/{code}.md) | {cell(m['metric'])} | "
                         f"{cell(m.get('bad_text', m['bad']))} | {cell(m.get('good_text', m['good']))} | "
                         f"{cell(m['verdict'])} |")
    lines += ["", "Verdicts:", ""]
    for code in sorted({*report["rules"], *report["errors"]}):
        note = " (advisory)" if report["rules"].get(code, {}).get("advisory") else ""
        lines.append(f"- {code}{note}: {status_text(rules[code][index])}")
    return "\n".join(lines)


# -- markers in hand-written files ---------------------------------------------------------

def between_markers(text: str, name: str, block: str, where: str) -> str:
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise SystemExit(f"torchlint.docs: {where} needs one '{start}' before one '{end}'")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{block.strip()}\n{end}{tail}"


# -- everything generated -------------------------------------------------------------------

def generated(root: Path) -> dict:
    """{path relative to root: text} for every generated text file."""
    reports = load_reports(root)
    evidence = evidence_from_reports(root, reports, load_scale_reports(root), load_more_runs(root, reports))
    out = {(RULE_PAGES / f"{rule.code}.md").as_posix(): render(rule, evidence) for rule in ALL_RULES}
    out[(RULE_PAGES / "index.md").as_posix()] = render_index(evidence)
    out[PACKAGED.as_posix()] = json.dumps(evidence, indent=1, ensure_ascii=False) + "\n"
    out[CATALOGUE.as_posix()] = catalogue_source()
    for path, name, block in ((README, "rules-table", rules_table()),
                              (EVIDENCE_PAGE, "evidence-results", evidence_results(reports, evidence)),
                              (CLAIMS_PAGE, "claims-results", claims_results(root)),
                              (COMPARISON_PAGE, "comparison-results", comparison_results(root)),
                              (FIXTURES_PAGE, "fixtures-table", fixtures_table(root))):
        try:
            text = (root / path).read_text(encoding="utf-8")
        except OSError as exc:
            raise SystemExit(f"torchlint.docs: cannot read {root / path}: {exc}") from None
        out[path.as_posix()] = between_markers(text, name, block, path.as_posix())
    return out


def catalogue_source() -> str:
    """``src/torchlint/catalogue.py``: every rule's code, name, default and text gate, as Python."""
    lines = [f"    \"{rule.code}\": (\"{rule.name}\", {rule.default})," for rule in ALL_RULES]
    gates = [f"    \"{rule.code}\": {rule.gate!r}," for rule in ALL_RULES]
    checks = [f"    \"{rule.code}\": \"{rule.text_check.__name__}\"," for rule in ALL_RULES if rule.text_check]
    return (
        '"""Generated by ``python -m torchlint.docs`` from the rule modules; do not edit.\n\n'
        "Every rule's code, kebab-case name, whether it is on by default and its text gate,\n"
        "for what must know the catalogue without importing it: importing the rules imports\n"
        "libcst and the model, most of a start-up, which config, a run answered from the\n"
        "cache and a file no enabled rule's gate admits (``runner``'s light path) skip.\n"
        'tests/test_catalogue.py keeps it identical to ``torchlint.rules.RULES_BY_CODE``.\n"""\n\n'
        "RULES = {  # code -> (name, on by default)\n" + "\n".join(lines) + "\n}\n\n"
        "GATES = {  # code -> the regexes that must all match a file for the rule to look at it\n"
        + "\n".join(gates) + "\n}\n\n"
        "TEXT_CHECKS = {  # code -> its gate's last question, a function of torchlint.text_checks\n"
        + "\n".join(checks) + "\n}\n"
    )


def pages() -> dict:
    """Rule pages by file name, from the packaged evidence (what ``torchlint rule`` prints)."""
    out = {f"{rule.code}.md": render(rule) for rule in ALL_RULES}
    out["index.md"] = render_index(packaged_evidence())
    return out


# -- charts ------------------------------------------------------------------------------------

def chart_digest(code: str, stem: str, report: dict) -> str:
    """What a chart shows, hashed; kept in the PNG so a test can tell a stale chart without matplotlib."""
    shown = {"code": code, "series": report["rules"][code]["series"], "label": device_label(report),
             "torch": report.get("torch"), "style": CHART_STYLE}
    return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()[:20]


CHART_STYLE = 3  # bump when the drawing code changes, so every chart is redrawn
DIGEST_KEY = "Description"


def png_text(path: Path) -> dict:
    """The tEXt chunks of a PNG file (no imaging library needed)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return {}
    found, at = {}, 8
    while at + 8 <= len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind = data[at + 4:at + 8]
        if kind == b"tEXt":
            key, _, value = data[at + 8:at + 8 + length].partition(b"\0")
            found[key.decode("latin-1")] = value.decode("latin-1")
        if kind == b"IEND":
            break
        at += 12 + length
    return found


def expected_charts(root: Path) -> dict:
    """{chart path relative to root: digest} for every series in every report."""
    out = {}
    for stem, report in load_reports(root):
        for code, rule in sorted(report["rules"].items()):
            if rule.get("series"):
                out[chart_path(code, stem).as_posix()] = chart_digest(code, stem, report)
    return out


def stale_charts(root: Path) -> list:
    stale = []
    for path, digest in expected_charts(root).items():
        full = root / path
        if not full.is_file() or png_text(full).get(DIGEST_KEY) != f"torchlint-series:{digest}":
            stale.append(path)
    return stale


_SCALE = {"s": (1e6, "µs"), "bytes": (1 / 1024, "KiB")}


def draw_chart(path: Path, code: str, report: dict, digest: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    series = report["rules"][code]["series"]
    factor, unit = _SCALE.get(series["unit"], (1, series["unit"]))
    fig, ax = plt.subplots(figsize=(8.6, 3.6), dpi=100)
    timed = series["unit"] == "s"
    for name, colour, marker in (("bad", "#c0392b", "o"), ("good", "#2471a3", "s")):
        # None leaves a gap in the line (matplotlib draws it as NaN; its stubs want numbers)
        values: List[Any] = [v * factor if v is not None else None for v in series[name]]
        steps = range(1, len(values) + 1)
        if timed:
            # times scatter (a busy machine adds spikes): points, log scale, and the median as a line
            ax.plot(steps, values, color=colour, marker=marker, markersize=2.5, linestyle="none", alpha=0.6,
                    label=f"{name}.py")
            middle = statistics.median(v for v in values if v is not None)
            ax.axhline(middle, color=colour, linestyle="--", linewidth=1.2,
                       label=f"{name}.py median {middle:.4g} {unit}")
        else:
            ax.plot(steps, values, color=colour, marker=marker, markersize=3, linewidth=1.2, label=f"{name}.py")
    if timed:
        ax.set_yscale("log")
    ax.set_xlabel(series["x"])
    ax.set_ylabel(series["name"] if unit in ("count", "float") else f"{series['name']} ({unit})", fontsize=8)
    ax.set_title(f"{code} {report['rules'][code]['fixture'].split('_', 1)[1]}: bad against good\n"
                 f"{device_label(report)}, torch {report.get('torch')}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps and forwards are counted
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over the points
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", metadata={DIGEST_KEY: f"torchlint-series:{digest}", "Software": None})
    plt.close(fig)


def draw_stale_charts(root: Path) -> list:
    stale = stale_charts(root)
    if not stale:
        return []
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SystemExit("torchlint.docs: charts need matplotlib: pip install 'torchlint[docs]' "
                         f"({len(stale)} chart(s) to draw)") from None
    reports = dict(load_reports(root))
    for path in stale:
        code, stem = Path(path).stem.split("-", 1)
        draw_chart(root / path, code, reports[stem], chart_digest(code, stem, reports[stem]))
    return stale


# -- the command -------------------------------------------------------------------------------

def stale(root: Path) -> list:
    """Generated files (text and charts) that differ from what their sources give."""
    out = []
    for path, text in generated(root).items():
        full = root / path
        if not full.is_file() or full.read_text(encoding="utf-8") != text:
            out.append(path)
    return out + stale_charts(root)


def write(root: Path, charts: bool = True) -> list:
    changed = []
    for path, text in generated(root).items():
        full = root / path
        if not full.is_file() or full.read_text(encoding="utf-8") != text:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text, encoding="utf-8")
            changed.append(path)
    measured.forget_packaged()
    if charts:
        changed += draw_stale_charts(root)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchlint.docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("."), help="the repository root (default: .)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when anything is stale")
    parser.add_argument("--no-charts", action="store_true", help="leave the charts alone (no matplotlib needed)")
    args = parser.parse_args(argv)
    if not (args.root / "pyproject.toml").is_file() or not (args.root / RULE_PAGES).is_dir():
        parser.error(f"{args.root} is not the torchlint repository root (no pyproject.toml and docs/rules/)")
    if args.check:
        found = stale(args.root)
        for path in found:
            print(f"stale: {path}")
        return 1 if found else 0
    for path in write(args.root, charts=not args.no_charts):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
