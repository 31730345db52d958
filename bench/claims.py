"""Check the practice notes' numbers for no_grad() and inference_mode() on this machine.

    python bench/claims.py [--device cpu|cuda] [--threads N] [--json OUT] [--quick]
    python bench/claims.py --seed [--device cpu|cuda] [--batches 1,64,256] [--json OUT]

The claims (from the practice notes torchlint's TL101 and TL106 rest on):

1. evaluation under ``torch.no_grad()`` uses 30-50% less memory than with
   autograd on;
2. it takes 15-25% less time;
3. ``torch.inference_mode()`` is 10-34% faster than ``torch.no_grad()``.

Models are built from their code with random weights (no download): a
ResNet-18 from ``bench/resnets.py`` (torchvision's layout, written from
``torch.nn`` layers) and a transformer encoder from
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

``--seed`` measures the notes' own scenario instead: ResNet-50 and ResNet-18
(torchvision's builders when torchvision imports, else ``bench/resnets.py``'s),
ImageNet-size inputs (3x224x224), batch 1, 64 and 256, float32, ``model.eval()``.
For each model and batch: warm-up forwards in every mode, then the peak memory
growth over one forward per mode (CUDA ``max_memory_allocated``; CPU peak
resident size), then rounds in which the modes take turns, images/s from the
median forward time. The notes claim 38-45% less memory and 18-23% more
throughput at batch 64, 47-52% and 21-26% at batch 256. Batch 256 of
ResNet-50 with autograd on needs about 21 GB: a GPU's job.

This is a benchmark: the test suite runs only ``--seed`` at a toy size.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import resnets  # noqa: E402 - the benchmarks' shared models, beside this file

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

def transformer():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    # enable_nested_tensor=False: the same math in every mode (the fast path differs only by mode otherwise)
    return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)


def build(name, batch, device, image=None):
    """The claims' models; with ``image``, the seed's: ``resnets.build(name)`` on images of that side."""
    torch.manual_seed(0)
    if image:
        model, x = resnets.build(name), torch.randn(batch, 3, image, image)
    elif name == "resnet18":
        model, x = resnets.handwritten("resnet18"), torch.randn(batch, 3, 112, 112)
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


def memory_child(name, batch, mode, device, image=None):
    """One forward in this fresh process: peak memory growth and saved-tensor bytes."""
    model, x = build(name, batch, device, image)
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


def measure_memory(name, batch, mode, device, threads, image=None):
    command = [sys.executable, __file__, "--child", name, str(batch), mode, "--device", device,
               "--threads", str(threads), *(["--image", str(image)] if image else [])]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"claims: memory run {name} batch {batch} {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- time: modes take turns ----------------------------------------------------------

def measure_time(name, batch, device, image=None, warmup=WARMUP, rounds=ROUNDS, per_round=PER_ROUND):
    """(median, fastest) forward time per mode: warm-up forwards in every mode, then rounds in
    which the modes take turns, the order rotated so that a busy machine slows all alike."""
    model, x = build(name, batch, device, image)
    seconds = {mode: [] for mode in MODES}
    for mode in MODES:  # cuDNN workspaces and the allocator settle before anything is timed
        for _ in range(warmup):
            with mode_context(mode):
                model(x)
    for round_index in range(rounds):
        order = MODES[round_index % 3:] + MODES[:round_index % 3]
        for mode in order:
            for _ in range(per_round):
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


def _pct(value):
    """A saving in percent: one decimal under 10%, where a whole number would round -0.8% to -1%."""
    return f"{value * 100:.1f}%" if abs(value) < 0.1 else f"{value * 100:.0f}%"


def judge(values, low, high):
    """'confirmed' when every measured saving reaches the claimed lower bound, 'not confirmed'
    when the median saving does not (a busy machine scatters single figures both ways)."""
    values = [v for v in values if v is not None]
    if not values:
        return "not measured"
    middle = statistics.median(values)
    span = f"{_pct(min(values))} to {_pct(max(values))}, median {_pct(middle)}"
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


# -- the notes' own scenario: ImageNet-size ResNets at batch 1, 64 and 256 -------------------

SEED_MODELS = ("resnet50", "resnet18")
SEED_BATCHES = (1, 64, 256)
# batch -> claim -> (what the notes say, lower bound, upper bound); batch 1 has no claim
SEED_CLAIMS = {
    64: {"no_grad_memory": ("no_grad() saves 38-45% of memory at batch 64", 0.38, 0.45),
         "no_grad_throughput": ("no_grad() gives 18-23% more images/s at batch 64", 0.18, 0.23)},
    256: {"no_grad_memory": ("no_grad() saves 47-52% of memory at batch 256", 0.47, 0.52),
          "no_grad_throughput": ("no_grad() gives 21-26% more images/s at batch 256", 0.21, 0.26)},
}
SEED_WARMUP = 3
SEED_METHOD = ("memory: one forward in a fresh process per mode, as for the other claims; time: in one process "
               "after 3 warm-up forwards per mode, the modes taking turns in rotating order")


def seed_row(name, batch, device, threads, image, rounds):
    # memory as for the other claims: one forward in a fresh process per mode
    memory = {mode: measure_memory(name, batch, mode, device, threads, image)["peak_growth_bytes"] for mode in MODES}
    median, _ = measure_time(name, batch, device, image, warmup=SEED_WARMUP, rounds=rounds, per_round=1)
    return {"model": name, "batch": batch, "peak_forward_bytes": memory, "median_forward_s": median,
            "images_per_s": {mode: batch / median[mode] for mode in MODES},
            "no_grad_memory_saving": saving(memory["grad"], memory["no_grad"]),
            "no_grad_throughput_gain": median["grad"] / median["no_grad"] - 1,
            "inference_mode_vs_no_grad_throughput_gain": median["no_grad"] / median["inference_mode"] - 1}


def seed_verdicts(runs):
    """For each claimed batch and claim: the verdict over the models measured at that batch."""
    verdicts = {}
    for batch, claims in SEED_CLAIMS.items():
        rows = [r for r in runs if r.get("batch") == batch and "error" not in r]
        for key, (_, low, high) in claims.items():
            field = "no_grad_memory_saving" if key == "no_grad_memory" else "no_grad_throughput_gain"
            verdicts[f"{key}@{batch}"] = judge([r[field] for r in rows], low, high)
    return verdicts


def run_seed(device, threads, batches, image, rounds):
    runs = []
    for name in SEED_MODELS:
        for batch in batches:
            started = time.perf_counter()
            try:
                row = seed_row(name, batch, device, threads, image, rounds)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - a size that does not fit loses only itself
                runs.append({"model": name, "batch": batch, "error": repr(exc)[:500]})
                print(f"{name} batch {batch}: {exc!r}"[:300], flush=True)
                continue
            runs.append(row)
            print(f"{name} batch {batch}: no_grad saves {percent(row['no_grad_memory_saving'])} of the peak, "
                  f"images/s {percent(row['no_grad_throughput_gain'])}, inference_mode vs no_grad "
                  f"{percent(row['inference_mode_vs_no_grad_throughput_gain'])} "
                  f"[{time.perf_counter() - started:.0f} s]", flush=True)
        if device == "cuda":
            torch.cuda.empty_cache()
    return runs


def seed_report(device, threads, batches, image, rounds):
    runs = run_seed(device, threads, batches, image, rounds)
    return {**environment(device, threads), "scenario": "seed", "torchvision": resnets.torchvision_version(),
            "cuda": torch.version.cuda if device == "cuda" else None, "dtype": "float32",
            "input": f"3x{image}x{image}", "iters": rounds, "method": SEED_METHOD,
            "models": {name: resnets.label(name) for name in SEED_MODELS},
            "claims": {f"{key}@{batch}": text for batch, claims in SEED_CLAIMS.items()
                       for key, (text, _, _) in claims.items()},
            "verdicts": seed_verdicts(runs), "runs": runs}


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
    parser.add_argument("--seed", action="store_true",
                        help="the notes' own scenario: ImageNet-size ResNet-50 and ResNet-18 at batch 1, 64, 256")
    parser.add_argument("--batches", default=",".join(map(str, SEED_BATCHES)), help="with --seed (default 1,64,256)")
    parser.add_argument("--image", type=int, help="with --seed: image side in pixels (default 224)")
    parser.add_argument("--rounds", type=int, default=20, help="with --seed: timed forwards per mode (default 20)")
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "BATCH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(args.threads)
    if args.child:
        name, batch, mode = args.child
        print(json.dumps(memory_child(name, int(batch), mode, args.device, args.image)))
        return 0
    if args.seed:
        batches = [int(b) for b in args.batches.split(",")]
        report = seed_report(args.device, args.threads, batches, args.image or 224, args.rounds)
        for key, verdict in report["verdicts"].items():
            print(f"{report['claims'][key]}: {verdict}")
        write_report(report, args.json)
        return 0
    rows, verdicts = run(args.device, args.threads, QUICK_PLAN if args.quick else PLAN)
    for key, verdict in verdicts.items():
        print(f"{CLAIMS[key][0]}: {verdict}")
    if args.json:
        report = {**environment(args.device, args.threads), "claims": {k: c[0] for k, c in CLAIMS.items()},
                  "verdicts": verdicts, "rows": rows,
                  "method": {"warmup": WARMUP, "rounds": ROUNDS, "forwards_per_round": PER_ROUND}}
        write_report(report, args.json)
    return 0


def write_report(report, path):
    if not path:
        return
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
