"""The cost of torchlint's hazards at the scale users run: a real model, a real batch, each loop beside its fix.

    python bench/scale.py --device cuda --json docs/evidence/scale/resnet50-<gpu>.json
    python bench/scale.py --device cpu --model resnet18 --batch 4 --image 64 --steps 8 --kept-steps 4 --anomaly-steps 4   # a quick look

The fixtures (``fixtures/``) are tiny programs, so their figures are bytes and microseconds. This
runs the same hazards in ResNet-50 (torchvision's when it imports, else ``bench/resnets.py``'s, with
random weights) on one random batch of images, float32. Every scenario runs the hazardous loop and
its fixed twin on a fresh model, two warm-up steps first (cuDNN, the allocator), and records after
every step the device memory still allocated above the level after warm-up (CUDA), the peak device
memory, the growth of the process's resident size (host memory), and the median step time.

``python -m torchlint.docs`` shows each scenario on the pages of the rules it names. A scenario
that raises loses only itself (``error``). This is a benchmark: the test suite runs it only at toy
sizes, to keep the script working.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import resnets  # noqa: E402 - the benchmarks' shared models, beside this file

# name -> (rules, what the loop does, what the numbers say and do not say, which step count it runs)
SCENARIOS = {
    "TL101_TL301_eval_outputs_kept": (
        ["TL101", "TL301"], "evaluation outputs kept in a list, without `no_grad`",
        "every kept output holds its forward's whole graph on the device; the fix keeps the outputs only. "
        "Growth is linear in the batches evaluated: out of memory within a few dozen batches on any GPU.",
        "kept"),
    "TL101_eval_loop": (
        ["TL101"], "evaluation loop without `no_grad`, outputs reduced to numbers",
        "nothing is kept across batches, so device memory does not grow; each forward still records "
        "a graph, which raises the peak device memory. Step time barely moves.",
        "steps"),
    "TL302_retain_graph": (
        ["TL302"], "`backward(retain_graph=True)` every training step",
        "the graph's saved tensors outlive backward() until the loss is rebound: one step's activations "
        "stay on the device and the peak doubles. It does not grow step after step here: only the last "
        "graph is reachable.",
        "steps"),
    "TL301_losses_append": (
        ["TL301"], "`losses.append(loss)` in a training loop",
        "after backward() a kept training loss holds no device memory (backward() freed its saved "
        "tensors); its autograd nodes and the loss scalars grow host memory every step. A host-memory "
        "leak, not a GPU one.",
        "steps"),
    "TL304_meter_sum": (
        ["TL304"], "a meter summing loss tensors (`meter.update(loss)`)",
        "as for kept losses: no device memory after backward(); the graph chained through the meter's "
        "sum grows host memory every step until the meter is reset.",
        "steps"),
    "TL503_anomaly": (
        ["TL503"], "anomaly detection left on in training",
        "every step checks for NaN and records tracebacks: step time, not memory.",
        "anomaly"),
}


# -- the loops: one step each; ``kept`` is what the loop keeps across steps ---------------------

def _train_step(model, optimizer, x, y, retain_graph=False):
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward(retain_graph=retain_graph)
    optimizer.step()
    return loss


def _forward(model, x, no_grad):
    model.eval()
    if no_grad:
        with torch.no_grad():
            return model(x)
    return model(x)


class Meter:
    """The running-sum meter of the PyTorch ImageNet example."""

    def __init__(self):
        self.sum, self.count = 0, 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n


def step_function(name, hazard):
    """One step of scenario ``name``: its hazard (``hazard=True``) or its fix."""
    if name == "TL101_TL301_eval_outputs_kept":
        return lambda model, opt, x, y, kept: kept.append(_forward(model, x, no_grad=not hazard))
    if name == "TL101_eval_loop":
        def evaluate(model, opt, x, y, kept):
            kept[:] = [(_forward(model, x, no_grad=not hazard).argmax(1) == y).float().mean().item()]
        return evaluate
    if name == "TL302_retain_graph":
        def retain(model, opt, x, y, kept):
            kept[:] = [_train_step(model, opt, x, y, retain_graph=hazard)]  # a loop variable keeps the last loss
        return retain
    if name == "TL301_losses_append":
        def store(model, opt, x, y, kept):
            loss = _train_step(model, opt, x, y)
            kept.append(loss if hazard else loss.item())
        return store
    if name == "TL304_meter_sum":
        meter = Meter()

        def update(model, opt, x, y, kept):
            loss = _train_step(model, opt, x, y)
            meter.update(loss if hazard else loss.item(), x.size(0))
        return update
    if name == "TL503_anomaly":
        def anomalous(model, opt, x, y, kept):
            with torch.autograd.set_detect_anomaly(hazard):
                _train_step(model, opt, x, y)
        return anomalous
    raise KeyError(name)


# -- measuring ------------------------------------------------------------------------------

def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _allocated(device):
    _sync(device)
    return torch.cuda.memory_allocated() if device == "cuda" else None


def _rss():
    """Resident bytes of this process (Linux), else None."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def slope(values):
    """Least-squares growth per step: robust to one step's jitter, exact for a straight line."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    return (sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
            / sum((x - mean_x) ** 2 for x in range(n)))


def run_side(name, hazard, settings, warmup=2):
    """One loop of ``steps`` steps on a fresh model: memory after every step, peak, host growth, time."""
    device, steps = settings["device"], settings["steps"][SCENARIOS[name][3]]
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    model = resnets.build(settings["model"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(settings["batch"], 3, settings["image"], settings["image"], device=device)
    y = torch.randint(0, 1000, (settings["batch"],), device=device)
    step = step_function(name, hazard)
    for _ in range(warmup):
        step(model, optimizer, x, y, [])
    base_alloc, base_rss = _allocated(device), _rss()
    kept, held, seconds = [], [], []
    for _ in range(steps):
        started = time.perf_counter()
        step(model, optimizer, x, y, kept)
        _sync(device)
        seconds.append(time.perf_counter() - started)
        held.append(None if base_alloc is None else _allocated(device) - base_alloc)
    rss = _rss()
    measured = {
        "steps": steps,
        "alloc_after_step": held,
        "alloc_growth_per_step": None if base_alloc is None else slope(held),
        "final_alloc_growth": held[-1],
        "rss_growth": None if rss is None or base_rss is None else rss - base_rss,
        "median_step_s": statistics.median(seconds),
        "peak_alloc": torch.cuda.max_memory_allocated() if device == "cuda" else None,
    }
    del kept, model, optimizer
    return measured


def run(settings, names):
    scenarios = {}
    for name in names:
        rules, what, reads, _ = SCENARIOS[name]
        entry = scenarios[name] = {"rules": rules, "what": what, "reads": reads}
        started = time.perf_counter()
        try:
            entry["bad"] = run_side(name, True, settings)
            entry["good"] = run_side(name, False, settings)
        except Exception:  # noqa: BLE001 - one scenario that raises loses only itself
            entry["error"] = traceback.format_exc()[-3000:]
            print(f"{name}: raised {entry['error'].strip().splitlines()[-1]}", flush=True)
            continue
        print(summary(name, entry, time.perf_counter() - started), flush=True)
    return scenarios


def _mib(value):
    return "n/a" if value is None else f"{value / (1 << 20):+,.1f} MiB"


def summary(name, entry, seconds):
    bad, good = entry["bad"], entry["good"]
    return (f"{name}: held after the last step {_mib(bad['final_alloc_growth'])} vs {_mib(good['final_alloc_growth'])}; "
            f"host {_mib(bad['rss_growth'])} vs {_mib(good['rss_growth'])}; median step "
            f"{bad['median_step_s'] * 1e3:.1f} vs {good['median_step_s'] * 1e3:.1f} ms [{seconds:.0f} s]")


def environment(settings):
    device = settings["device"]
    return {
        "device": device,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else "CPU",
        "torch": torch.__version__,
        "torchvision": resnets.torchvision_version(),
        "model": settings["model"],
        "model_label": resnets.label(settings["model"]),
        "batch": settings["batch"],
        "image": f"3x{settings['image']}x{settings['image']}",
        "dtype": "float32",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    parser.add_argument("--model", choices=resnets.NAMES, default="resnet50")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--image", type=int, default=224, help="image side in pixels (default 224)")
    parser.add_argument("--steps", type=int, default=60, help="steps of the training and plain eval loops")
    parser.add_argument("--kept-steps", type=int, default=12,
                        help="batches of the loop that keeps its outputs (default 12: 31 GB at ResNet-50 batch 32)")
    parser.add_argument("--anomaly-steps", type=int, default=15, help="steps with anomaly detection (default 15)")
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all)")
    parser.add_argument("--json", metavar="OUT", help="write the report as JSON")
    args = parser.parse_args(argv)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")
    names = [n.strip() for n in args.scenarios.split(",")] if args.scenarios else list(SCENARIOS)
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    settings = {"device": device, "model": args.model, "batch": args.batch, "image": args.image,
                "steps": {"steps": args.steps, "kept": args.kept_steps, "anomaly": args.anomaly_steps}}
    command = " ".join(["python", "bench/scale.py", *(sys.argv[1:] if argv is None else argv)])
    report = {**environment(settings), "command": command,
              "scenarios": run(settings, names)}
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 1 if any("error" in s for s in report["scenarios"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
