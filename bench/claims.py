"""Check the practice notes' numbers for no_grad() and inference_mode() on this machine.

    python bench/claims.py [--device cpu|cuda] [--threads N] [--json OUT] [--quick]

The claims (from the practice notes torchlint's TL101 and TL106 rest on):

1. evaluation under ``torch.no_grad()`` uses 30-50% less memory than with
   autograd on;
2. it takes 15-25% less time;
3. ``torch.inference_mode()`` is 10-34% faster than ``torch.no_grad()``.

Models are built from their code with random weights (no download): a
ResNet-18 written here from ``torch.nn`` layers (torchvision's layout:
BasicBlocks [2, 2, 2, 2], 1000 classes) and a transformer encoder from
``torch.nn.TransformerEncoder``. For each model, batch size and mode
(autograd on, ``no_grad``, ``inference_mode``), all in ``model.eval()``:

* memory, each in a fresh process so one measurement cannot hide another:
  the peak resident set size during one forward minus the resident size
  before it (CPU; ``torch.cuda.max_memory_allocated`` growth on CUDA), and
  the bytes of saved tensors the forward's graph holds (graph census of
  ``fixtures/harness.py``; 0 without a graph);
* time: warm-up forwards first, then rounds in which the three modes take
  turns (so a busy machine slows all alike), median of all timed forwards.

Runs in about three minutes on 2 cores (``--quick``: one batch size per model).
This is a benchmark: the test suite never runs it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
MODES = ("grad", "no_grad", "inference_mode")
CLAIMS = {
    "no_grad_memory": ("torch.no_grad() in evaluation saves 30-50% of memory", 0.30, 0.50),
    "no_grad_time": ("torch.no_grad() in evaluation saves 15-25% of time", 0.15, 0.25),
    "inference_mode_time": ("inference_mode() is 10-34% faster than no_grad()", 0.10, 0.34),
}
# model -> (batch sizes, input description)
PLAN = {
    "resnet18": ((1, 4, 16), "3x112x112 images"),
    "transformer": ((1, 4, 16), "sequences of 128 tokens, d_model 256"),
}
QUICK_PLAN = {"resnet18": ((8,), PLAN["resnet18"][1]), "transformer": ((8,), PLAN["transformer"][1])}
WARMUP, ROUNDS, PER_ROUND = 2, 4, 2


# -- models ----------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


def resnet18(num_classes=1000):
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    inplanes = 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes)]
        inplanes = planes
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


def transformer():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    # enable_nested_tensor=False: the same math in every mode (the fast path differs only by mode otherwise)
    return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)


def build(name, batch, device):
    torch.manual_seed(0)
    if name == "resnet18":
        model, x = resnet18(), torch.randn(batch, 3, 112, 112)
    else:
        model, x = transformer(), torch.randn(batch, 128, 256)
    return model.to(device).eval(), x.to(device)


def mode_context(mode):
    if mode == "no_grad":
        return torch.no_grad()
    if mode == "inference_mode":
        return torch.inference_mode()
    return torch.enable_grad()


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


# -- memory: one fresh process per measurement -------------------------------------

def _status_kib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _census():
    spec = importlib.util.spec_from_file_location("_claims_harness", ROOT / "fixtures" / "harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.census


def memory_child(name, batch, mode, device):
    """One forward in this fresh process: peak memory growth and saved-tensor bytes."""
    model, x = build(name, batch, device)
    census = _census()
    sync(device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        # "5" resets the peak resident size (VmHWM) to the current one (Linux >= 4.0)
        Path("/proc/self/clear_refs").write_text("5")
        before = _status_kib("VmRSS") * 1024
    with mode_context(mode):
        out = model(x)
    sync(device)
    if device == "cuda":
        peak_growth = torch.cuda.max_memory_allocated() - before
    else:
        peak_growth = _status_kib("VmHWM") * 1024 - before
    saved = census([out]) if out.grad_fn is not None else {"nodes": 0, "saved_bytes": 0}
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    return {"peak_growth_bytes": peak_growth, "saved_bytes": saved["saved_bytes"], "nodes": saved["nodes"],
            "parameter_bytes": weights}


def measure_memory(name, batch, mode, device, threads):
    command = [sys.executable, __file__, "--child", name, str(batch), mode, "--device", device,
               "--threads", str(threads)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"claims: memory run {name} batch {batch} {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- time: modes take turns ----------------------------------------------------------

def measure_time(name, batch, device):
    model, x = build(name, batch, device)
    seconds = {mode: [] for mode in MODES}
    for mode in MODES:
        for _ in range(WARMUP):
            with mode_context(mode):
                model(x)
    for round_index in range(ROUNDS):
        order = MODES[round_index % 3:] + MODES[:round_index % 3]
        for mode in order:
            for _ in range(PER_ROUND):
                sync(device)
                start = time.perf_counter()
                with mode_context(mode):
                    out = model(x)
                sync(device)
                seconds[mode].append(time.perf_counter() - start)
                del out
    return ({mode: statistics.median(values) for mode, values in seconds.items()},
            {mode: min(values) for mode, values in seconds.items()})


# -- claims ----------------------------------------------------------------------------

def saving(worse, better):
    return None if not worse or better is None or worse is None else 1.0 - better / worse


def judge(values, low, high):
    """'confirmed' when every measured saving reaches the claimed lower bound, 'not confirmed'
    when the median saving does not (a busy machine scatters single figures both ways)."""
    values = [v for v in values if v is not None]
    if not values:
        return "not measured"
    middle = statistics.median(values)
    span = f"{min(values) * 100:.0f}% to {max(values) * 100:.0f}%, median {middle * 100:.0f}%"
    if min(values) >= low:
        return f"confirmed: {span}" + (" (more than claimed)" if min(values) > high else "")
    if middle < low:
        return f"not confirmed: {span}, claimed {low * 100:.0f}-{high * 100:.0f}%"
    return f"partly confirmed: {span}, claimed {low * 100:.0f}-{high * 100:.0f}%"


def verdicts_of(rows):
    return {key: judge([r[f"{key}_saving"] for r in rows], low, high) for key, (_, low, high) in CLAIMS.items()}


def run(device, threads, plan):
    rows = []
    for name, (batches, inputs) in plan.items():
        for batch in batches:
            started = time.perf_counter()
            memory = {mode: measure_memory(name, batch, mode, device, threads) for mode in MODES}
            times, fastest = measure_time(name, batch, device)
            row = {"model": name, "inputs": inputs, "batch": batch, "memory": memory, "median_forward_s": times,
                   "min_forward_s": fastest}
            row["no_grad_memory_saving"] = saving(memory["grad"]["peak_growth_bytes"],
                                                  memory["no_grad"]["peak_growth_bytes"])
            # the same with the weights counted: what a device holding the model would see
            weights = memory["grad"]["parameter_bytes"]
            row["no_grad_memory_saving_with_weights"] = saving(memory["grad"]["peak_growth_bytes"] + weights,
                                                               memory["no_grad"]["peak_growth_bytes"] + weights)
            row["no_grad_time_saving"] = saving(times["grad"], times["no_grad"])
            row["inference_mode_time_saving"] = saving(times["no_grad"], times["inference_mode"])
            # the fastest forward of each mode: what a quiet machine would show, for comparison
            row["no_grad_time_saving_min"] = saving(fastest["grad"], fastest["no_grad"])
            row["inference_mode_time_saving_min"] = saving(fastest["no_grad"], fastest["inference_mode"])
            rows.append(row)
            print(line(row, time.perf_counter() - started), flush=True)
    verdicts = verdicts_of(rows)
    return rows, verdicts


def percent(value):
    return "n/a" if value is None else f"{value * 100:+.0f}%"


def mib(value):
    return "n/a" if value is None else f"{value / (1 << 20):.1f} MiB"


def line(row, seconds):
    m, t = row["memory"], row["median_forward_s"]
    return (f"{row['model']:<11} batch {row['batch']:>2}: peak memory {mib(m['grad']['peak_growth_bytes'])} / "
            f"{mib(m['no_grad']['peak_growth_bytes'])} / {mib(m['inference_mode']['peak_growth_bytes'])} "
            f"(saved tensors {mib(m['grad']['saved_bytes'])}); time {t['grad'] * 1e3:.1f} / "
            f"{t['no_grad'] * 1e3:.1f} / {t['inference_mode'] * 1e3:.1f} ms (grad / no_grad / inference_mode); "
            f"savings: no_grad memory {percent(row['no_grad_memory_saving'])} "
            f"({percent(row['no_grad_memory_saving_with_weights'])} with weights), "
            f"time {percent(row['no_grad_time_saving'])}, inference_mode vs no_grad "
            f"{percent(row['inference_mode_time_saving'])} (fastest forwards: "
            f"{percent(row['no_grad_time_saving_min'])}, {percent(row['inference_mode_time_saving_min'])}) "
            f"[{seconds:.0f} s]")


def cpu_name():
    try:
        for text in Path("/proc/cpuinfo").read_text().splitlines():
            if text.startswith("model name"):
                return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device, threads):
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"device": device, "device_name": torch.cuda.get_device_name() if device == "cuda" else cpu_name(),
            "cpu_cores": len(os.sched_getaffinity(0)), "torch_threads": threads, "torch": torch.__version__,
            "python": platform.python_version(), "load_average_1min": load}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads on CPU (default 1)")
    parser.add_argument("--quick", action="store_true", help="one batch size per model")
    parser.add_argument("--json", metavar="OUT", help="write the results as JSON")
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "BATCH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(args.threads)
    if args.child:
        name, batch, mode = args.child
        print(json.dumps(memory_child(name, int(batch), mode, args.device)))
        return 0
    rows, verdicts = run(args.device, args.threads, QUICK_PLAN if args.quick else PLAN)
    for key, verdict in verdicts.items():
        print(f"{CLAIMS[key][0]}: {verdict}")
    if args.json:
        report = {**environment(args.device, args.threads), "claims": {k: c[0] for k, c in CLAIMS.items()},
                  "verdicts": verdicts, "rows": rows,
                  "method": {"warmup": WARMUP, "rounds": ROUNDS, "forwards_per_round": PER_ROUND}}
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
