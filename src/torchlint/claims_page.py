"""The results in docs/claims.md, from the reports of ``bench/claims.py`` in docs/claims/.

Two kinds of report, one device each: the claims' own plan (a ResNet-18 and a transformer encoder
at small batches; ``rows``) and the notes' own scenario (``--seed``: ImageNet-size ResNets at
batch 1, 64 and 256; ``runs``). Every figure on the page is read from them, so the page cannot
say what no report measured.
"""
from __future__ import annotations

from pathlib import Path

from torchlint.measured import cell, device_label, read_json

CLAIMS_DIR = Path("docs/claims")
MODES = ("grad", "no_grad", "inference_mode")
_MODEL_NAMES = {"resnet18": "ResNet-18", "resnet50": "ResNet-50", "transformer": "Transformer"}


def load_claims(root: Path) -> tuple:
    """([(stem, report)] of the claims' plan, [(stem, report)] of the seed scenario), by file name."""
    plain: list = []
    seed: list = []
    for path in sorted((root / CLAIMS_DIR).glob("*.json")):
        report = read_json(path, "a report of bench/claims.py")
        key = "runs" if report.get("scenario") == "seed" else "rows"
        if not isinstance(report.get(key), list) or not isinstance(report.get("verdicts"), dict):
            raise SystemExit(f"torchlint.docs: {path} is not a report of bench/claims.py (no {key} or verdicts)")
        (seed if key == "runs" else plain).append((path.stem, report))
    return plain, seed


def _percent(value) -> str:
    """One decimal under 10%, where a whole number would show -0.8% as -1%."""
    if value is None:
        return "n/a"
    digits = 1 if abs(value) < 0.1 else 0
    return f"{value * 100:.{digits}f}%".replace("-", "−")


def _mib(n) -> str:
    return "n/a" if n is None else f"{n / (1 << 20):,.1f}"


def _rate(images_per_s: float) -> str:
    """Images per second: whole numbers where they are large, a decimal where a CPU is slow."""
    return f"{images_per_s:,.0f}" if images_per_s >= 100 else f"{images_per_s:.1f}"


def _source(stem: str) -> str:
    return f"[`claims/{stem}.json`](claims/{stem}.json)"


def _verdicts(reports: list) -> list:
    """One row per claim, one column per report."""
    keys = list(dict.fromkeys(key for _, report in reports for key in report["claims"]))
    header = ["claim"] + [f"{device_label(report)}, torch {report.get('torch')}" for _, report in reports]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for key in keys:
        text = next(report["claims"][key] for _, report in reports if key in report["claims"])
        verdicts = [report["verdicts"].get(key, "not measured") for _, report in reports]
        lines.append(f"| {cell(text)} | " + " | ".join(cell(v) for v in verdicts) + " |")
    return lines


def _plain_table(stem: str, report: dict) -> list:
    lines = [f"### {device_label(report)}, torch {report.get('torch')} ({_source(stem)})", "",
             "| model | batch | peak growth, MiB: grad / no_grad / inference_mode | saved tensors (grad), MiB "
             "| no_grad memory saving (with weights) | median forward, ms: grad / no_grad / inference_mode "
             "| no_grad time saving | inference_mode vs no_grad |", "|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        memory, seconds = row["memory"], row["median_forward_s"]
        lines.append(
            f"| {_MODEL_NAMES.get(row['model'], row['model'])} | {row['batch']} "
            f"| {' / '.join(_mib(memory[m]['peak_growth_bytes']) for m in MODES)} "
            f"| {_mib(memory['grad']['saved_bytes'])} "
            f"| {_percent(row['no_grad_memory_saving'])} ({_percent(row['no_grad_memory_saving_with_weights'])}) "
            f"| {' / '.join(f'{seconds[m] * 1e3:.1f}' for m in MODES)} "
            f"| {_percent(row['no_grad_time_saving'])} | {_percent(row['inference_mode_time_saving'])} |")
    return lines


def _seed_table(stem: str, report: dict) -> list:
    models = ", ".join(report.get("models", {}).values())
    lines = [f"### {device_label(report)}, torch {report.get('torch')} ({_source(stem)})", "",
             f"{models}; input {report.get('input')}, {report.get('dtype')}, {report.get('iters')} timed forwards "
             f"per mode. Method: {report.get('method', 'see bench/claims.py --seed')}.", "",
             "| model | batch | peak growth over one forward, MiB: autograd on / no_grad / inference_mode "
             "| no_grad saves | images/s: autograd on / no_grad / inference_mode | no_grad throughput gain "
             "| inference_mode vs no_grad |", "|---|---|---|---|---|---|---|"]
    for run in report["runs"]:
        name = _MODEL_NAMES.get(run["model"], run["model"])
        if "error" in run:
            lines.append(f"| {name} | {run['batch']} | raised {cell(run['error'])} | | | | |")
            continue
        peak, rate = run["peak_forward_bytes"], run["images_per_s"]
        lines.append(
            f"| {name} | {run['batch']} | {' / '.join(_mib(peak[m]) for m in MODES)} "
            f"| {_percent(run['no_grad_memory_saving'])} | {' / '.join(_rate(rate[m]) for m in MODES)} "
            f"| {_percent(run['no_grad_throughput_gain'])} | {_percent(run['inference_mode_vs_no_grad_throughput_gain'])} |")
    return lines


def claims_results(root: Path) -> str:
    """The generated part of docs/claims.md: verdicts by device, then every measured row."""
    plain, seed = load_claims(root)
    lines = ["## Verdicts: the three figures", ""] + _verdicts(plain)
    lines += ["", "## Results: the claims' plan", ""]
    for stem, report in plain:
        lines += _plain_table(stem, report) + [""]
    if seed:
        lines += ["## The notes' own scenario: ImageNet-size ResNets at batch 1, 64 and 256", ""]
        lines += _verdicts(seed) + [""]
        for stem, report in seed:
            lines += _seed_table(stem, report) + [""]
    return "\n".join(lines)
