"""Measured evidence as every surface shows it: the reports, one line per device, the Evidence sections.

Two kinds of report feed the rule pages, each written by a script that runs torch (the linter never does):

* ``docs/evidence/<device>.json``: ``fixtures/harness.py``, every fixture pair on one device, with the
  SHA-256 of the files each rule was measured on (``files``) and the probes that raised (``errors``);
* ``docs/evidence/scale/<name>.json``: ``bench/scale.py``, the same hazards in a real model at a real
  batch size.

``python -m torchlint.docs`` turns them into the Evidence section of every rule page and
``src/torchlint/evidence.json``, which ``torchlint rule`` and the editor hover read without the
repository. A measurement whose fixture files changed since is shown as what it is: a figure of an
earlier version of the fixture, never one of the current fixture.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Optional

EVIDENCE_DIR = Path("docs/evidence")
SCALE_DIR = EVIDENCE_DIR / "scale"
# More runs of a device report, in docs/evidence/<kind>/<report stem>[-<n>].json, shown beside its figures.
MORE_RUNS = {
    "repeats": "Run again on this machine",
    "fixed": ("`bad.py` after `torchlint check --fix --unsafe-fixes`, against `good.py` "
              "(\"not confirmed\" means the fix removed the hazard)"),
}
CHARTS_DIR = EVIDENCE_DIR / "charts"
FIXTURES_DIR = Path("fixtures")
HARNESS = "fixtures/harness.py"
SCALE_SCRIPT = "bench/scale.py"
HARNESS_DEFAULTS = {"iterations": 20, "timing_iterations": 100}


# -- reading the reports ------------------------------------------------------------------

def read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"torchlint.docs: cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"torchlint.docs: {path} is not {what}")
    return data


def load_reports(root: Path) -> list:
    """[(file stem, harness report)] for every harness report in docs/evidence/, by name."""
    reports = []
    for path in sorted((root / EVIDENCE_DIR).glob("*.json")):
        report = read_json(path, "a harness report")
        if not isinstance(report.get("rules"), dict):
            raise SystemExit(f"torchlint.docs: {path} is not a harness report (no 'rules')")
        report.setdefault("errors", {})
        _check_entries(path, report["rules"], "verdict")
        _check_entries(path, report["errors"], "error")
        reports.append((path.stem, report))
    return reports


def load_more_runs(root: Path, reports: list) -> dict:
    """{kind: {report stem: [(file stem, harness report)]}} for the runs in docs/evidence/<kind>/."""
    stems = [stem for stem, _ in reports]
    runs: Dict[str, Dict[str, list]] = {}
    for kind in MORE_RUNS:
        for path in sorted((root / EVIDENCE_DIR / kind).glob("*.json")):
            owner = next((stem for stem in stems if path.stem == stem or path.stem.startswith(stem + "-")), None)
            if owner is None:
                raise SystemExit(f"torchlint.docs: {path} names no report of docs/evidence/ "
                                 f"(its name must start with one of: {', '.join(stems)})")
            report = read_json(path, "a harness report")
            report.setdefault("errors", {})
            _check_entries(path, report.get("rules") or {}, "verdict")
            _check_entries(path, report["errors"], "error")
            runs.setdefault(kind, {}).setdefault(owner, []).append((path.stem, report))
    return runs


def _check_entries(path: Path, entries: dict, text_key: str) -> None:
    broken = sorted(code for code, entry in entries.items()
                    if not isinstance(entry, dict) or not isinstance(entry.get(text_key), str))
    if broken:
        raise SystemExit(f"torchlint.docs: {path}: no {text_key} for {', '.join(broken)}")
    unhashed = sorted(code for code, entry in entries.items() if not isinstance(entry.get("files"), dict))
    if unhashed:
        raise SystemExit(f"torchlint.docs: {path}: no fixture file hashes ('files') for {', '.join(unhashed)}; "
                         f"measure again, or stamp the report: python {HARNESS} --merge REPORT "
                         "--measured-at COMMIT --json REPORT")


def load_scale_reports(root: Path) -> list:
    """[(file stem, scale report)] for every report of bench/scale.py in docs/evidence/scale/."""
    reports = []
    for path in sorted((root / SCALE_DIR).glob("*.json")):
        report = read_json(path, "a scale report")
        scenarios = report.get("scenarios")
        if not isinstance(scenarios, dict) or not all(
                isinstance(s, dict) and isinstance(s.get("rules"), list)
                and (isinstance(s.get("error"), str) or isinstance(s.get("bad"), dict) and isinstance(s.get("good"), dict))
                for s in scenarios.values()):
            raise SystemExit(f"torchlint.docs: {path} is not a scale report "
                             "(scenarios with rules, and bad and good or an error)")
        reports.append((path.stem, report))
    return reports


# -- what a report says of one rule -----------------------------------------------------------

def device_kind(report: dict) -> str:
    return "CUDA" if report.get("device") == "cuda" else "CPU"


def device_label(report: dict) -> str:
    details = [report.get("device_name") or "unknown"]
    if device_kind(report) == "CPU":
        details.append(f"{report.get('cpu_cores')} cores, {report.get('torch_threads')} torch thread(s)")
    elif report.get("cuda"):
        details.append(f"CUDA {report['cuda']}")
    return f"{device_kind(report)} ({', '.join(details)})"


def harness_command(report: dict, code: Optional[str] = None, json_out: Optional[str] = None) -> str:
    parts = ["python", HARNESS, "--device", report.get("device", "cpu")]
    if code:
        parts += ["--codes", code]
    for key, default in HARNESS_DEFAULTS.items():
        value = report.get(key) or 0
        if value != default:
            parts += ["--" + key.replace("_", "-"), str(value)]
    if json_out:
        parts += ["--json", json_out]
    return " ".join(parts)


def size_text(sizes: dict) -> str:
    def value(v):
        if isinstance(v, list) and v and all(isinstance(x, list) for x in v):  # shapes
            return ", ".join("x".join(map(str, x)) or "scalar" for x in v)
        return ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    return "; ".join(f"{key.replace('_', ' ')} {value(v)}" for key, v in sizes.items())


def chart_path(code: str, stem: str) -> Path:
    return CHARTS_DIR / f"{code}-{stem}.png"


def changed_files(root: Path, fixture: str, files: dict) -> list:
    """The measured files of ``fixture`` whose content is not what was measured (gone ones included)."""
    changed = []
    for name, digest in sorted(files.items()):
        path = root / FIXTURES_DIR / fixture / name
        current = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        if current != digest:
            changed.append(name)
    return changed


def evidence_entry(root: Path, stem: str, report: dict, code: str) -> dict:
    """What one device report says of one rule: measured, raised, or not measured; and on which fixture."""
    entry = {
        "source": (EVIDENCE_DIR / f"{stem}.json").as_posix(),
        "device": report.get("device"),
        "device_kind": device_kind(report),
        "device_label": device_label(report),
        "torch": report.get("torch"),
        "command": harness_command(report, code),
        "fixtures_at": report.get("fixtures_at"),
    }
    rule, error = report["rules"].get(code), report["errors"].get(code)
    found = rule or error
    if found is None:
        return {**entry, "status": "missing", "changed": []}
    entry.update(fixture=found.get("fixture"), changed=changed_files(root, found.get("fixture", ""), found["files"]))
    if error is not None:
        return {**entry, "status": "raised", "error": error["error"]}
    return {
        **entry,
        "status": "measured",
        "claim": rule.get("claim"),
        "advisory": bool(rule.get("advisory")),
        "verdict": rule["verdict"],
        "metrics": [[m["metric"], m.get("bad_text", str(m["bad"])), m.get("good_text", str(m["good"])),
                     m["verdict"]] for m in rule.get("metrics", [])],
        "sizes": size_text(rule.get("sizes") or {}),
        "chart": chart_path(code, stem).as_posix() if rule.get("series") else None,
    }


def evidence_from_reports(root: Path, reports: list, scale_reports: list, more_runs: Optional[dict] = None) -> dict:
    """What ships in the package: {code: [one entry per device report]} and the scale rows by rule."""
    codes = sorted({code for _, report in reports for code in (*report["rules"], *report["errors"])})
    rules = {code: [_with_more_runs(root, evidence_entry(root, stem, report, code), stem, code, more_runs or {})
                    for stem, report in reports] for code in codes}
    scale: Dict[str, list] = {}
    for stem, report in scale_reports:
        for name, scenario in report["scenarios"].items():
            for code in scenario["rules"]:
                scale.setdefault(code, []).append(scale_entry(stem, report, name, scenario))
    return {"generated_by": "python -m torchlint.docs", "rules": rules,
            "scale": {code: scale[code] for code in sorted(scale)}}


def _with_more_runs(root: Path, entry: dict, stem: str, code: str, more_runs: dict) -> dict:
    """The entry, with the status of every other run of its rule on the same machine, by kind."""
    for kind in MORE_RUNS:
        found = []
        for run_stem, report in more_runs.get(kind, {}).get(stem, []):
            run = evidence_entry(root, run_stem, report, code)
            if run["status"] != "missing":
                found.append({"source": (EVIDENCE_DIR / kind / f"{run_stem}.json").as_posix(),
                              "status": status_text(run)})
        if found:
            entry[kind] = found
    return entry


_PACKAGED_CACHE: Dict[str, Any] = {}


def packaged_evidence() -> dict:
    """The evidence shipped beside this module (empty when a build left it out)."""
    if "data" not in _PACKAGED_CACHE:
        path = Path(__file__).with_name("evidence.json")
        try:
            _PACKAGED_CACHE["data"] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            _PACKAGED_CACHE["data"] = {"rules": {}}
    return _PACKAGED_CACHE["data"]


def forget_packaged() -> None:
    """After the docs rewrote evidence.json: the next read takes the new file."""
    _PACKAGED_CACHE.clear()


# -- one line per device ------------------------------------------------------------------------

def _earlier(entry: dict) -> str:
    at = f" (fixtures as of commit {entry['fixtures_at']})" if entry.get("fixtures_at") else ""
    return f"on an earlier version of the fixture{at}: {', '.join(entry['changed'])} changed since"


def status_text(entry: dict, brief: bool = False) -> str:
    """The verdict of one device, or why there is none; an earlier fixture's figure is said to be one.

    ``brief``: for a table cell, an earlier fixture's verdict and a probe's error in a word or two.
    """
    kind = entry["device_kind"]
    if entry["status"] == "missing":
        return f"not measured on {kind}: {entry['source']} has no entry for this rule"
    if entry["status"] == "raised":
        said = f"the probe raised {entry['error'].split(':')[0] if brief else entry['error']}"
        if entry["changed"]:
            return (f"not measured on {kind} since the fixture changed (earlier fixture: {said})" if brief else
                    f"not measured on {kind} since the fixture changed; {_earlier(entry)}, {said}")
        return f"not measured on {kind}: {said}"
    if entry["changed"]:
        if brief:
            return f"not measured on {kind} since the fixture changed (earlier fixture: {entry_word(entry)})"
        return (f"not measured on {kind} since the fixture changed; {_earlier(entry)}, it measured: "
                f"{entry['verdict']}")
    return entry["verdict"]


def measured_line(entry: dict) -> str:
    """One line for the terminal, the hover and the page: where, with what, and the verdict."""
    head = "**Measured**" if entry["status"] == "measured" and not entry["changed"] else "**Not measured**"
    return f"{head} on {entry['device_label']}, torch {entry['torch']}: {status_text(entry)}"


def entry_word(entry: dict) -> str:
    """A verdict in a word or three, for tables: confirmed, not confirmed, probe raised, not measured."""
    if entry["status"] == "missing":
        return "not measured"
    return entry["verdict"].split(":")[0] if entry["status"] == "measured" else "probe raised"


def verdict_word(entries: list, kind: str) -> str:
    """The index's cell for the first report of this device kind."""
    for entry in entries:
        if entry["device_kind"] == kind:
            return f"{entry_word(entry)} (earlier fixture)" if entry["changed"] else entry_word(entry)
    return "not measured"


# -- the Evidence section of a rule page ------------------------------------------------------

def cell(text) -> str:
    return str(text).replace("|", "\\|")


def evidence_section(entries: list, scale: list) -> str:
    lines = ["## Evidence"]
    found = [entry for entry in entries if entry["status"] != "missing"]
    if not found:
        return "\n".join(lines + ["Not measured yet: this rule has no fixture probe in a harness report.", ""])
    fixture = found[0]["fixture"]
    lines.append(
        f"The fixture pair [`fixtures/{fixture}/`](../../fixtures/{fixture}/) (`bad.py` has the hazard, "
        f"`good.py` is the fix) runs under `{HARNESS}` with the same seed, sizes and iterations; "
        f"`probe.py` beside it says how the claim is measured.")
    measured = [entry for entry in found if entry["status"] == "measured"]
    if measured:
        lines += ["", f"Claim: {measured[0]['claim']}."]
        if measured[0]["advisory"]:
            lines += ["", "This rule is opt-in and its claim is about speed: the verdict is advisory, "
                          "and a run that does not show the claim says so."]
    lines += ["", "| device | torch | sizes | verdict |", "|---|---|---|---|"]
    for entry in entries:
        lines.append(f"| {cell(entry['device_label'])} | {cell(entry['torch'])} | {cell(entry.get('sizes') or '')} "
                     f"| {cell(status_text(entry, brief=True))} |")
    for entry in found:
        lines += _device_block(entry)
    if not any(entry["device"] == "cuda" for entry in entries):
        lines += ["", "No CUDA measurement yet. On a GPU: "
                      f"`python {HARNESS} --device cuda --json docs/evidence/<gpu>.json`, then "
                      "`python -m torchlint.docs`."]
    if scale:
        lines += scale_block(scale)
    return "\n".join(lines) + "\n"


def _device_block(entry: dict) -> list:
    lines = ["", f"### {entry['device_label']}, torch {entry['torch']}", ""]
    if entry["changed"]:
        lines += [f"**Not measured on {entry['device_kind']} since the fixture changed.** The figures below were "
                  f"measured {_earlier(entry)}; they do not describe the current fixture.", ""]
    if entry["status"] == "raised":
        return lines + [f"The probe raised `{entry['error']}` (the traceback is in `{entry['source']}`)."] + \
            _more_runs_lines(entry) + ["", f"Reproduce: `{entry['command']}`."]
    lines += ["| measured | bad | good | verdict |", "|---|---|---|---|"]
    for name, bad, good, verdict in entry["metrics"]:
        lines.append(f"| {cell(name)} | {cell(bad)} | {cell(good)} | {cell(verdict)} |")
    lines += ["", f"**Verdict:** {entry['verdict']}", "", f"Sizes: {entry['sizes']}."]
    lines += _more_runs_lines(entry)
    if entry["chart"]:
        # pages live in docs/rules/, charts in docs/evidence/charts/
        lines += ["", f"![{entry['fixture']}: bad against good](../{entry['chart'].split('/', 1)[1]})"]
    lines += ["", f"Reproduce: `{entry['command']}` (all rules: `{entry['source']}`)."]
    return lines


def _more_runs_lines(entry: dict) -> list:
    lines = []
    for kind, what in MORE_RUNS.items():
        for run in entry.get(kind, ()):
            lines += ["", f"{what} (`{run['source']}`): {run['status']}"]
    return lines


# -- at scale: bench/scale.py ---------------------------------------------------------------------

def _bytes(n, sign: str = "") -> str:
    """Bytes in the unit that reads best: 30.0 KiB, 2,620.3 MiB, 31.06 GiB."""
    if n is None:
        return "n/a"
    for scale, unit, digits in ((1 << 30, "GiB", 2), (1 << 20, "MiB", 1), (1 << 10, "KiB", 1)):
        if abs(n) >= scale:
            return f"{n / scale:{sign},.{digits}f} {unit}"
    return f"{n:{sign}.0f} B"


def _ratio(bad, good) -> str:
    """' (4.3x)' where the hazard costs at least half as much again, else nothing."""
    return f" ({bad / good:.1f}x)" if bad is not None and good and bad / good >= 1.5 else ""


def _held(side: dict) -> str:
    per_step = side.get("alloc_growth_per_step")
    trend = f" ({_bytes(per_step, '+')}/step)" if per_step and per_step >= (1 << 20) else ""
    return _bytes(side.get("final_alloc_growth")) + trend


def _host(side: dict) -> str:
    grown, steps = side.get("rss_growth"), side.get("steps") or 0
    per_step = f" ({_bytes(grown / steps, '+')}/step)" if grown and steps and grown >= (1 << 20) else ""
    return _bytes(grown, "+") + per_step


def _ms(seconds) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:.1f} ms"


def _scale_row(name: str, scenario: dict) -> list:
    what = scenario.get("what", name)
    if "error" in scenario:
        lines = [line for line in scenario["error"].strip().splitlines() if line.strip()]
        return [what, "the scenario raised " + (lines[-1] if lines else "an error"), "", "", "", ""]
    bad, good = scenario["bad"], scenario["good"]
    peak, step = (bad.get("peak_alloc"), good.get("peak_alloc")), (bad.get("median_step_s"), good.get("median_step_s"))
    return [what, str(bad.get("steps")), f"{_held(bad)} / {_held(good)}",
            f"{_bytes(peak[0])} / {_bytes(peak[1])}{_ratio(*peak)}", f"{_host(bad)} / {_host(good)}",
            f"{_ms(step[0])} / {_ms(step[1])}{_ratio(*step)}"]


def scale_entry(stem: str, report: dict, name: str, scenario: dict) -> dict:
    where = report.get("device_name") or report.get("device") or "unknown device"
    return {
        "source": (SCALE_DIR / f"{stem}.json").as_posix(),
        "setting": (f"{report.get('model_label', report.get('model'))}, batch {report.get('batch')} of "
                    f"{report.get('image')}, {report.get('dtype', 'float32')}, on {where}, torch {report.get('torch')}"),
        "scenario": name,
        "what": scenario.get("what", name),
        "reads": scenario.get("reads", ""),
        "row": _scale_row(name, scenario),
        "command": report.get("command") or f"python {SCALE_SCRIPT}",
    }


SCALE_HEADER = ("scenario", "steps", "held on the device after the last step: hazard / fixed",
                "peak device memory: hazard / fixed", "host memory (RSS) growth: hazard / fixed",
                "median step: hazard / fixed")


def scale_block(entries: list) -> list:
    lines = []
    for setting in dict.fromkeys(entry["setting"] for entry in entries):
        rows = [entry for entry in entries if entry["setting"] == setting]
        lines += ["", f"### At scale: {setting}", "",
                  "The fixtures are tiny, so their figures are bytes and microseconds. The same hazard in a real "
                  f"model, each loop beside its fixed twin (`{rows[0]['source']}`):", "",
                  "| " + " | ".join(SCALE_HEADER) + " |", "|" + "---|" * len(SCALE_HEADER)]
        lines += ["| " + " | ".join(cell(c) for c in entry["row"]) + " |" for entry in rows]
        lines += [""] + [f"- {entry['what']}: {entry['reads']}" for entry in rows if entry["reads"]]
        lines += ["", f"Reproduce: `{rows[0]['command']}`."]
    return lines
