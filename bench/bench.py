#!/usr/bin/env python3
"""Speed benchmark: torchlint next to its peers, on the same files, in one run.

    python bench/bench.py            # full run: timm, lightning, transformers' models, torchvision
    python bench/bench.py --quick    # torchvision only, a few minutes

Run it with the interpreter torchlint is installed in (``torchlint check`` and
``flake8 --select=TL`` come from there).  Everything else goes to a cache
outside the repository ($TORCHLINT_BENCH_CACHE or ~/.cache/torchlint-bench):
the pinned package sources, a tree of hard links to the selected ``.py`` files
that every tool is pointed at, two virtualenvs for the peers (TorchFix pins
an older libcst than torchlint's) and the JSON results.

Every tool runs as a subprocess on the same tree, one after the other; for
each one we record wall time, CPU time (user+sys of the whole process tree,
from wait4), peak RSS of its largest process (wait4's ru_maxrss) and the peak
of the summed RSS of its process tree (sampled from /proc).  Speed is given
as ratios measured in this one run: absolute seconds depend on the machine
and on whatever else runs on it.  See bench/README.md for the figures.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from importlib import metadata
from pathlib import Path

# torchlint.model.project.NO_INDEX_ENV: lint every file alone, to measure what the index costs.
NO_INDEX_ENV = "TORCHLINT_NO_PROJECT_INDEX"

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import training_corpus  # noqa: E402  (the training corpus's own list of files)

# ---------------------------------------------------------------------------
# What is measured, pinned.

# (distribution, version, kind, sub-folder of the unpacked source to keep; None = all)
CORPUS = [
    ("timm", "1.0.31", "sdist", None),
    ("lightning", "2.6.6", "sdist", None),
    ("transformers", "5.23.0", "sdist", "src/transformers/models"),
    ("torchvision", "0.29.1", "wheel", None),  # no sdist on the index: the wheel's .py files
]
QUICK_CORPUS = ("torchvision",)

TORCHFIX_PIN = "0.7.0"
RUFF_PIN = "0.17.6"
# flake8 and its default plugins are pinned to the versions of the interpreter
# running this script, so that the with/without-torchlint runs differ only in
# the plugin; these are used when that interpreter has no flake8.
FLAKE8_FALLBACK_PINS = {"flake8": "7.5.0", "pyflakes": "4.1.0", "pycodestyle": "2.15.0", "mccabe": "0.7.0"}

# Directories that some tool skips by default (ruff, flake8, torchlint): never
# put in the tree, so that every tool sees exactly the same files.
SKIP_DIRS = frozenset(
    ".bzr .direnv .eggs .git .git-rewrite .hg .ipynb_checkpoints .mypy_cache .nox .pants.d "
    ".pyenv .pytest_cache .pytype .ruff_cache .svn .tox .venv .vscode __pypackages__ _build "
    "buck-out build dist node_modules site-packages venv __pycache__ CVS .torchlint_cache".split()
)

TORCHFIX_FILES = {"full": 300, "quick": 30}  # TorchFix parses ~1 file/s here: it gets a sample
LINEARITY_LINES = {"full": (1_000, 50_000), "quick": (1_000, 10_000)}


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


def default_cache() -> Path:
    env = os.environ.get("TORCHLINT_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "torchlint-bench"


# ---------------------------------------------------------------------------
# Sources: bench/corpus.py's downloader when it is there and works, else our own.


def _fetch_shared(name: str, version: str, kind: str, cache: Path):
    try:
        sys.path.insert(0, str(HERE))
        import corpus as shared  # bench/corpus.py: same cache layout, shares downloads

        info = shared.fetch_one(name, version, kind, cache)
        folder = info.get("dir") if isinstance(info, dict) else None
        if folder and Path(folder).is_dir():
            return Path(folder)
    except Exception as exc:  # noqa: BLE001 - anything wrong there: use our own
        log(f"  bench/corpus.py could not fetch {name}: {type(exc).__name__}: {exc}")
    finally:
        if sys.path and sys.path[0] == str(HERE):
            sys.path.pop(0)
    return None


def _pip_download(args: list, dest: Path) -> list:
    tmp = Path(tempfile.mkdtemp(prefix=".dl-", dir=dest))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           "-q", "-d", str(tmp), *args]
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pass
    got = []
    for f in tmp.iterdir():  # an sdist may be saved even when its metadata step fails
        target = dest / f.name
        shutil.move(str(f), str(target))
        got.append(target)
    shutil.rmtree(tmp, ignore_errors=True)
    return got


def _unpack_py(archive: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    root = into.resolve()

    def safe(name: str) -> bool:
        target = (root / name).resolve()
        return name.endswith(".py") and root in target.parents

    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if safe(member):
                    zf.extract(member, into)
    else:
        with tarfile.open(archive) as tf:
            members = [m for m in tf.getmembers() if m.isfile() and safe(m.name)]
            try:
                tf.extractall(into, members=members, filter="data")
            except TypeError:  # Python without extraction filters
                tf.extractall(into, members=members)


def _fetch_own(name: str, version: str, kind: str, cache: Path) -> Path:
    target = cache / "bench-src" / f"{name}-{version}"
    marker = target / ".bench-fetched"
    if marker.is_file():
        return Path(marker.read_text().strip())
    archives = cache / "bench-archives"
    archives.mkdir(parents=True, exist_ok=True)
    spec = f"{name}=={version}"
    got = []
    if kind == "sdist":
        got = _pip_download(["--no-binary", ":all:", spec], archives)
    if not got:
        got = _pip_download(["--only-binary", ":all:", spec], archives)
    if not got:  # platform wheels only (torchvision): any manylinux x86_64 one has the same .py files
        got = _pip_download(["--only-binary", ":all:", "--platform", "manylinux_2_28_x86_64",
                             "--platform", "manylinux2014_x86_64", "--python-version", "3.11", spec],
                            archives)
    if not got:
        raise SystemExit(f"bench: cannot download {spec} (is a package index reachable?)")
    if target.exists():
        shutil.rmtree(target)
    _unpack_py(got[0], target)
    children = [c for c in target.iterdir() if c.is_dir()]
    is_sdist = not got[0].name.endswith(".whl")
    folder = children[0] if is_sdist and len(children) == 1 else target
    marker.write_text(str(folder))
    return folder


def fetch(name: str, version: str, kind: str, cache: Path) -> Path:
    return _fetch_shared(name, version, kind, cache) or _fetch_own(name, version, kind, cache)


# ---------------------------------------------------------------------------
# The tree every tool is pointed at.


def _skipped_dir(name: str) -> bool:
    return name in SKIP_DIRS or name.endswith((".egg-info", ".egg")) or name.startswith(".")


def _link(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)  # torchlint skips symlinks; hard links cost nothing
    except OSError:
        shutil.copyfile(src, dst)


def _select_files(label: str, root: Path, models_stride: int):
    """(path relative to root, absolute path) of the .py files to benchmark, sorted."""
    families = None
    if label.startswith("transformers") and models_stride > 1:
        subdirs = sorted(d.name for d in root.iterdir() if d.is_dir() and not _skipped_dir(d.name))
        families = set(subdirs[::models_stride])
    out = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(d)
                         and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg")))
        rel_folder = Path(folder).relative_to(root)
        if families is not None and rel_folder.parts and rel_folder.parts[0] not in families:
            dirs[:] = []
            continue
        for name in sorted(names):
            path = Path(folder) / name
            if name.endswith(".py") and path.is_file() and not path.is_symlink() and name.isascii():
                out.append((rel_folder / name, path))
    return out


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def build_tree(sources: list, tree: Path, models_stride: int) -> dict:
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    # An empty pyproject.toml at the top, and torchlint.toml (torchlint passes over a
    # pyproject.toml without [tool.torchlint]): the tools' config searches stop here.
    (tree / "pyproject.toml").write_text("# benchmark tree: every tool runs with its defaults\n")
    (tree / "torchlint.toml").write_text("# benchmark tree: torchlint's defaults\n")
    files, per_package = [], {}
    for label, root in sources:
        count = lines = size = 0
        for rel, src in _select_files(label, root, models_stride):
            dst = tree / label / rel
            _link(src, dst)
            data = src.read_bytes()
            count += 1
            lines += _count_lines(data)
            size += len(data)
            files.append(str(Path(label) / rel))
        per_package[label] = {"files": count, "lines": lines, "bytes": size}
    return {"root": str(tree), "files": files, "packages": per_package,
            "n_files": len(files), "n_lines": sum(p["lines"] for p in per_package.values()),
            "n_bytes": sum(p["bytes"] for p in per_package.values())}


def build_sample(tree: dict, sample: Path, wanted: int) -> dict:
    """Every k-th file of the tree (all packages, stratified by path order)."""
    files = tree["files"]
    step = max(1, math.ceil(len(files) / max(1, wanted)))
    chosen = files[::step]
    if sample.exists():
        shutil.rmtree(sample)
    sample.mkdir(parents=True)
    (sample / "pyproject.toml").write_text("# benchmark sample: every tool runs with its defaults\n")
    lines = size = torch_files = 0
    for rel in chosen:
        src = Path(tree["root"]) / rel
        _link(src, sample / rel)
        data = src.read_bytes()
        lines += _count_lines(data)
        size += len(data)
        torch_files += b"torch" in data
    return {"root": str(sample), "files": chosen, "n_files": len(chosen), "n_lines": lines,
            "n_bytes": size, "step": step, "files_containing_torch": torch_files}


def check_same_files(tree: dict, ruff) -> dict:
    """Ask torchlint's and ruff's own file discovery which files they would check."""
    root = Path(tree["root"])
    expected = {os.path.normpath(f) for f in tree["files"]}
    report = {"expected": len(expected)}
    try:
        from torchlint import config as tl_config
        from torchlint.discover import discover

        found, _ = discover([str(root)], tl_config.Settings())
        got = {os.path.normpath(os.path.relpath(f, root)) for f in found}
        report["torchlint"] = {"found": len(got), "missing": sorted(expected - got)[:5],
                               "extra": sorted(got - expected)[:5]}
    except Exception as exc:  # noqa: BLE001 - an internal API: best effort
        report["torchlint"] = {"error": f"{type(exc).__name__}: {exc}"}
    if ruff:
        proc = subprocess.run([ruff, "check", "--isolated", "--no-cache", "--show-files", "."],
                              cwd=root, capture_output=True, text=True)
        got = {os.path.normpath(os.path.relpath(line.strip(), root))
               for line in proc.stdout.splitlines() if line.strip().endswith(".py")}
        report["ruff"] = {"found": len(got), "missing": sorted(expected - got)[:5],
                          "extra": sorted(got - expected)[:5]}
    return report


# ---------------------------------------------------------------------------
# Peers, in virtualenvs of their own.


def _current_versions(names) -> dict:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def ensure_venv(path: Path, pins: dict, extra: tuple = ()) -> Path | None:
    """A virtualenv at path with exactly these pins installed (and ``extra`` pip arguments,
    such as ``-e REPO``); None if it cannot be made."""
    python = path / "bin" / "python"
    marker = path / "bench-pins.json"
    want = json.dumps({**pins, **({"extra": list(extra)} if extra else {})}, sort_keys=True)
    if python.exists() and marker.is_file() and marker.read_text() == want:
        return path
    log(f"  creating {path} with {', '.join(f'{k}=={v}' for k, v in pins.items())}")
    if path.exists():
        shutil.rmtree(path)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        *[f"{k}=={v}" for k, v in pins.items()], *extra],
                       check=True, capture_output=True, text=True, timeout=900)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        tail = (getattr(exc, "stderr", "") or "").strip().splitlines()[-3:]
        log(f"  could not set up {path}: {' | '.join(tail) or exc}")
        return None
    marker.write_text(want)
    return path


# ---------------------------------------------------------------------------
# Measuring one command.


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _tree_rss(root_pid: int) -> int:
    """Summed RSS in bytes of root_pid and all its descendants (Linux /proc)."""
    parents, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{entry}/statm", "rb") as fh:
                pages = int(fh.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = pages * _PAGE
    total, todo, seen = 0, [root_pid], set()
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


class _Sampler(threading.Thread):
    def __init__(self, pid: int, interval: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval, self.peak = pid, interval, 0
        self.done = threading.Event()

    def run(self) -> None:
        if not os.path.isdir("/proc"):
            return
        waits = [0.02, 0.05, 0.1]  # short runs get a sample too
        while not self.done.wait(waits.pop(0) if waits else self.interval):
            try:
                self.peak = max(self.peak, _tree_rss(self.pid))
            except OSError:
                pass


def _busy_cpu_s() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (Linux /proc/stat)."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()[1:]
        ticks = [int(x) for x in fields]
        busy = sum(ticks[:8]) - ticks[3] - ticks[4]  # all but idle and iowait (guest is in user)
        return busy / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def measure(cmd: list, cwd: Path, out_dir: Path, name: str, timeout: float,
            sample_rss: bool = True) -> dict:
    """Run cmd once; wall, CPU (user+sys of it and its reaped children), RSS, exit code."""
    slug = "".join(c if c.isalnum() else "-" for c in name).strip("-")
    out_path, err_path = out_dir / f"{slug}.out", out_dir / f"{slug}.err"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    busy0 = _busy_cpu_s()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, start_new_session=True)
        sampler = _Sampler(proc.pid) if sample_rss else None
        if sampler:
            sampler.start()
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        busy1 = _busy_cpu_s()
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if sampler:
            sampler.done.set()
            sampler.join()
    try:
        output_lines = sum(1 for _ in open(out_path, "rb"))
    except OSError:
        output_lines = None
    cpu = usage.ru_utime + usage.ru_stime
    # Cores kept busy by everything else while this ran: 0 on a quiet machine.
    others = (max(0.0, (busy1 - busy0 - cpu) / wall) if busy0 is not None and busy1 is not None
              and wall > 0 else None)
    return {
        "name": name, "cmd": cmd, "cwd": str(cwd), "wall_s": wall,
        "cpu_s": cpu, "other_load_cores": others,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # KiB on Linux: the largest single process
        "tree_rss_mb": (sampler.peak / 2**20) if sampler and sampler.peak else None,
        "exit_code": proc.returncode, "timed_out": timed_out.is_set(),
        "output_lines": output_lines, "stdout": str(out_path), "stderr": str(err_path),
        "loadavg_1m_before": load,
    }


def wait_quiet(limit_s: float, cores: float = 0.3, window_s: float = 3.0) -> float:
    """Wait (at most limit_s) until other processes use under `cores` cores; returns the wait."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        busy0 = _busy_cpu_s()
        time.sleep(window_s)
        busy1 = _busy_cpu_s()
        if busy0 is None or busy1 is None or (busy1 - busy0) / window_s < cores:
            break
    return time.perf_counter() - start


def startup(cmd: list, cwd: Path, repeat: int = 7) -> dict:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return {"cmd": cmd, "median_s": statistics.median(times), "min_s": min(times),
            "exit_code": proc.returncode}


# ---------------------------------------------------------------------------
# Linearity: one generated PyTorch-ish file of N lines.

_HEADER = '''"""Generated by bench/bench.py: PyTorch-ish code for the linearity check."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

'''

_BLOCK = '''
class Block{i}(nn.Module):
    def __init__(self, dim={dim}, hidden={hidden}):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        h = self.norm(x)
        h = self.fc2(F.gelu(self.fc1(h)))
        return x + self.drop(h)


def train_{i}(model, loader, optimizer, scheduler=None, device="cpu"):
    model.train()
    total, losses = 0.0, []
    for step, (inputs, targets) in enumerate(loader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = F.cross_entropy(outputs, targets)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append({stored})
        total += loss.item()
    return total / max(1, len(loader)), losses


@torch.no_grad()
def evaluate_{i}(model, loader):
    model.eval()
    correct = 0
    for inputs, targets in loader:
        preds = model(inputs).argmax(dim=-1)
        correct += (preds == targets).sum().item()
    return correct / len(loader.dataset)


def validate_{i}(model, loader):
    model.eval()
    scores = [model(x).mean() for x, _ in loader]
    return sum(s.item() for s in scores) / len(scores)

'''


def generate_file(n_lines: int) -> str:
    parts, count, i = [_HEADER], _HEADER.count("\n"), 0
    while True:
        # one block in ten keeps a hazard (TL301, TL101) so that reporting is exercised too
        block = _BLOCK.format(i=i, dim=64 + i % 7, hidden=256 + i % 5,
                              stored="loss" if i % 10 == 0 else "loss.item()")
        if count + block.count("\n") > n_lines:
            break
        parts.append(block)
        count += block.count("\n")
        i += 1
    parts.append("# padding\n" * (n_lines - count))
    return "".join(parts)


_INPROC = r'''
import gc, json, sys, time
from torchlint.engine import lint_source
from torchlint.rules import ALL_RULES
rules = [r for r in ALL_RULES if getattr(r, "default", True)]
out = {}
for path, repeat in zip(sys.argv[1::2], sys.argv[2::2]):
    data = open(path, "rb").read()
    lint_source(data, path, rules)  # warm: imports, caches
    rec = {}
    for key, collect in (("seconds", True), ("seconds_gc_off", False)):
        best = None
        for _ in range(int(repeat)):
            gc.collect()
            if not collect:
                gc.disable()
            t = time.perf_counter()
            result = lint_source(data, path, rules)
            t = time.perf_counter() - t
            gc.enable()
            best = t if best is None else min(best, t)
        rec[key] = best
    rec["findings"] = len(result.diagnostics)
    out[path] = rec
print(json.dumps(out))
'''


def linearity(sizes: tuple, work: Path, torchlint_cmd: list, no_cache: list, timeout: float) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    rows, paths = [], []
    for n in sizes:
        path = work / f"generated_{n}.py"
        path.write_text(generate_file(n))
        paths.append(path)
    # In-process: lint_source only, no interpreter start or imports.
    args = []
    for n, path in zip(sizes, paths):
        args += [str(path), "5" if n <= 5_000 else "1"]
    inproc = {}
    try:
        proc = subprocess.run([sys.executable, "-c", _INPROC, *args], capture_output=True,
                              text=True, timeout=timeout)
        inproc = json.loads(proc.stdout.strip().splitlines()[-1])
    except Exception as exc:  # noqa: BLE001 - internal API moved: CLI figures only
        log(f"  in-process timing unavailable: {type(exc).__name__}: {exc}")
    for n, path in zip(sizes, paths):
        cli = measure([*torchlint_cmd, "check", "--exit-zero", *no_cache, str(path)], work, work,
                      f"linearity-{n}", timeout)
        rec = inproc.get(str(path), {})
        rows.append({"lines": n, "cli_wall_s": cli["wall_s"], "cli_peak_rss_mb": cli["peak_rss_mb"],
                     "inproc_s": rec.get("seconds"), "inproc_gc_off_s": rec.get("seconds_gc_off"),
                     "findings": rec.get("findings"),
                     "cli_output_lines": cli["output_lines"]})
    small, big = rows[0], rows[-1]
    out = {"rows": rows}
    if small["inproc_s"] and big["inproc_s"]:
        out["per_line_ratio_inproc"] = (big["inproc_s"] / big["lines"]) / (small["inproc_s"] / small["lines"])
    if small["inproc_gc_off_s"] and big["inproc_gc_off_s"]:
        out["per_line_ratio_inproc_gc_off"] = ((big["inproc_gc_off_s"] / big["lines"])
                                               / (small["inproc_gc_off_s"] / small["lines"]))
    out["per_line_ratio_cli"] = (big["cli_wall_s"] / big["lines"]) / (small["cli_wall_s"] / small["lines"])
    return out


# ---------------------------------------------------------------------------
# Reporting.


def machine_info() -> dict:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "?"
    mem = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "mem_gib": mem, "os": platform.platform(),
            "python": platform.python_version(), "python_impl": platform.python_implementation()}


def repo_info() -> dict:
    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except Exception:  # noqa: BLE001
            return ""
    return {"commit": git("rev-parse", "--short", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--", "src"))}


def _fmt(x, spec=".1f", none="-"):
    return none if x is None else format(x, spec)


def table(rows: list, ref: dict, n_files: int, n_lines: int) -> str:
    head = ("tool", "wall s", "CPU s", "files/s", "lines/s", "RSS MB", "tree MB", "exit",
            "torchlint ÷ tool (wall)", "(CPU)", "others")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        wall = r["wall_s"]
        ok = not r["timed_out"]
        ratio_w = ref["wall_s"] / wall if ok else None
        ratio_c = ref["cpu_s"] / r["cpu_s"] if ok and r["cpu_s"] else None
        lines.append("| " + " | ".join([
            r["name"],
            ("≥" if not ok else "") + f"{wall:.2f}",
            f"{r['cpu_s']:.2f}",
            _fmt(n_files / wall if ok else None, ",.0f" if n_files / wall >= 100 else ",.1f"),
            _fmt(n_lines / wall if ok else None, ",.0f"),
            f"{r['peak_rss_mb']:.0f}",
            _fmt(r["tree_rss_mb"], ".0f"),
            "timeout" if not ok else str(r["exit_code"]),
            "—" if r is ref else _fmt(ratio_w, ".2f") + "×",
            "—" if r is ref else _fmt(ratio_c, ".2f") + "×",
            _fmt(r.get("other_load_cores"), ".1f"),
        ]) + " |")
    return "\n".join(lines)


def _ratio_line(label: str, a: dict, b: dict) -> str:
    if a is None or b is None or a["timed_out"] or b["timed_out"]:
        return f"{label}: n/a"
    w, c = a["wall_s"] / b["wall_s"], a["cpu_s"] / b["cpu_s"] if b["cpu_s"] else float("nan")
    return f"{label}: {w:.2f}× wall, {c:.2f}× CPU"


# ---------------------------------------------------------------------------


GATE_CHECK = r"""
import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from torchlint.engine import lint_source
from torchlint.rule import Rule
from torchlint.rules import ALL_RULES
from torchlint.tree_gate import TreeIndex

GATES = [(cls, name, cls.__dict__[name]) for cls in (Rule, *ALL_RULES)
         for name in ("may_apply", "needs_tree") if name in cls.__dict__]
PROGRAM_GATE = TreeIndex.is_unit_test_or_other_framework

def lint(path):
    return [d.as_text() for d in lint_source(Path(path).read_bytes(), path, ALL_RULES).diagnostics]

def both(path):
    gated = lint(path)
    for cls, name, _ in GATES:
        setattr(cls, name, classmethod(lambda cls, arg: True))
    TreeIndex.is_unit_test_or_other_framework = lambda self, path: False
    try:
        ungated = lint(path)
    finally:
        for cls, name, value in GATES:
            setattr(cls, name, value)
        TreeIndex.is_unit_test_or_other_framework = PROGRAM_GATE
    return path, gated == ungated, len(gated)

if __name__ == "__main__":
    files = [str(p) for p in sorted(Path(".").rglob("*.py"))]
    with ProcessPoolExecutor() as pool:
        done = list(pool.map(both, files, chunksize=16))
    diff = [path for path, same, _ in done if not same]
    print(json.dumps({"files": len(files), "findings": sum(n for _, _, n in done), "differ": diff}))
"""


def _findings(row) -> list:
    """The finding lines of a torchlint text run (the summary line left out)."""
    if row is None:
        return []
    lines = Path(row["stdout"]).read_text(errors="replace").splitlines()
    return [line for line in lines if ": TL" in line]


def same_results(tree_rows, sample_rows, tree_root, run_dir, timeout) -> dict:
    """Parallel, serial, cached and ungated runs must report the very same findings."""
    def by(rows, name):
        return next((r for r in rows if r["name"] == name), None)

    out = {}
    parallel, cold, warm = (_findings(by(tree_rows, n)) for n in (
        "torchlint check", "torchlint check, cache cold", "torchlint check, cache warm"))
    out["tree: --no-cache == cache cold == cache warm"] = (
        f"identical ({len(parallel)} findings)" if parallel == cold == warm else "DIFFERENT")
    a, b = _findings(by(sample_rows, "torchlint check")), _findings(by(sample_rows, "torchlint check --jobs=1"))
    if by(sample_rows, "torchlint check --jobs=1"):
        out["sample: default --jobs == --jobs=1"] = f"identical ({len(a)} findings)" if a == b else "DIFFERENT"
    # Every file with the gates and without them (libcst for all: a few minutes).
    proc = subprocess.run([sys.executable, "-c", GATE_CHECK], cwd=tree_root, capture_output=True,
                          text=True, timeout=timeout)
    try:
        gate = json.loads(proc.stdout)
        out["tree: gates on == gates off"] = (
            f"identical ({gate['files']} files, {gate['findings']} findings)" if not gate["differ"]
            else f"DIFFERENT in {gate['differ'][:5]}")
    except ValueError:
        out["tree: gates on == gates off"] = f"not run: {proc.stderr.strip()[-300:]}"
    return out


def targets(result, tree_rows, sample_rows, starts, lin, ratios, same) -> list:
    """Issue 6's targets, each with what this run measured."""
    def row(rows, name):
        return next((r for r in rows if r["name"] == name), None)

    def add(target, met, measured):
        found.append({"target": target, "met": bool(met), "measured": measured})

    found = []
    n = result["tree"]["n_files"]
    tl = row(tree_rows, "torchlint check")
    tf = ratios.get("torchlint ÷ TorchFix CLI (sample)")
    if tf:
        add("torchlint check >= 10x faster than TorchFix CLI", tf["wall"] <= 0.1, f"{1 / tf['wall']:.1f}x (wall)")
    f8 = ratios.get("flake8 TL ÷ flake8 TOR (sample)")
    if f8:
        add("flake8 with torchlint >= 5x faster than flake8 with TorchFix", f8["wall"] <= 0.2,
            f"{1 / f8['wall']:.1f}x (wall)")
    if tl:
        add("whole corpus >= 200 files/s cold", n / tl["wall_s"] >= 200, f"{n / tl['wall_s']:.0f} files/s")
    cache = ratios.get("cache cold ÷ warm")
    if cache:
        add("warm run >= 10x faster than cold", cache["wall"] >= 10, f"{cache['wall']:.1f}x")
    plug = ratios.get("flake8 with torchlint ÷ flake8 without")
    if plug:
        add("flake8 plugin adds <= 50% to flake8", plug["wall"] <= 1.5, f"+{(plug['wall'] - 1) * 100:.0f}%")
    ratio = lin.get("per_line_ratio_inproc")
    if ratio:
        add("50,000-line file <= 1.5x per line of a 1,000-line file", ratio <= 1.5, f"{ratio:.2f}x")
    for label in ("torchlint --version", "torchlint check empty.py"):
        if label in starts:
            ms = starts[label]["median_s"] * 1000
            add(f"{label} well under 0.5 s", ms < 350, f"{ms:.0f} ms")
    alone = row(tree_rows, "torchlint check, no project index")
    if tl and alone:
        add("project index adds <= 20% to a cold run", tl["wall_s"] <= 1.2 * alone["wall_s"],
            f"{(tl['wall_s'] / alone['wall_s'] - 1) * 100:+.0f}% ({tl['wall_s']:.1f} s vs {alone['wall_s']:.1f} s)")
    warm = starts.get("torchlint check 2,000-line file, warm cache")
    if warm:
        ms = warm["median_s"] * 1000
        add("warm single-file check of a 2,000-line file <= 100 ms (CLI, cache)", ms <= 100, f"{ms:.0f} ms")
    if tl and tl.get("tree_rss_mb"):
        add("peak memory over the corpus < 400 MB in total", tl["tree_rss_mb"] < 400,
            f"{tl['tree_rss_mb']:.0f} MB (process tree)")
    add("same findings across the fast paths", all(str(v).startswith("identical") for v in same.values()),
        "; ".join(f"{k}: {v}" for k, v in same.items()))
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="torchvision only, smaller samples")
    ap.add_argument("--cache", type=Path, default=None,
                    help="cache folder (default $TORCHLINT_BENCH_CACHE or ~/.cache/torchlint-bench)")
    ap.add_argument("--json", type=Path, default=None,
                    help="where to write the JSON result (default CACHE/results/bench-*.json)")
    ap.add_argument("--models-stride", type=int, default=None,
                    help="keep every K-th model family of transformers/models (default 1: all)")
    ap.add_argument("--torchfix-files", type=int, default=None,
                    help="size of the sample TorchFix runs on (full 300, quick 30; 0 = whole tree)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per tool run (default 1200)")
    ap.add_argument("--jobs", default=None,
                    help="pass -j/--jobs N to torchlint, flake8 and TorchFix (default: each tool's own)")
    ap.add_argument("--skip-torchfix", action="store_true", help="leave TorchFix out")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before each run, wait up to S seconds for other processes to go idle")
    ap.add_argument("--profile", action="store_true",
                    help="also run torchlint -j1 under cProfile on the sample and print the top 15")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "full"
    cache = (args.cache or default_cache()).expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = cache / "results" / f"{mode}-{stamp}"
    run_dir.mkdir(parents=True)
    models_stride = args.models_stride or 1
    tf_files = TORCHFIX_FILES[mode] if args.torchfix_files is None else args.torchfix_files

    # --- torchlint from this interpreter
    try:
        import torchlint
    except ImportError:
        raise SystemExit(f"bench: torchlint is not importable from {sys.executable}; "
                         "run this script with the interpreter torchlint is installed in")
    # pip compiles a wheel's modules when it installs them; an editable install
    # under PYTHONDONTWRITEBYTECODE has no bytecode, and each run would compile
    # torchlint's sources anew. Compile them once, as an install would.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(torchlint.__file__).parent)],
                   stdout=subprocess.DEVNULL, check=False)
    script = Path(sys.executable).parent / "torchlint"
    torchlint_cmd = [str(script)] if script.exists() else [sys.executable, "-m", "torchlint"]
    help_text = subprocess.run([*torchlint_cmd, "check", "--help"], capture_output=True, text=True).stdout
    no_cache = ["--no-cache"] if "--no-cache" in help_text else []
    jobs = [f"--jobs={args.jobs}"] if args.jobs and "--jobs" in help_text else []
    here_versions = _current_versions(["flake8", "pyflakes", "pycodestyle", "mccabe", "libcst"])
    has_flake8 = "flake8" in here_versions
    flake8_pins = ({k: here_versions[k] for k in FLAKE8_FALLBACK_PINS if k in here_versions}
                   if has_flake8 else dict(FLAKE8_FALLBACK_PINS))

    # --- sources and tree
    log(f"[1/5] sources ({mode}) into {cache}")
    chosen = [c for c in CORPUS if mode == "full" or c[0] in QUICK_CORPUS]
    sources, pinned = [], []
    for name, version, kind, sub in chosen:
        folder = fetch(name, version, kind, cache)
        root = folder / sub if sub else folder
        if not root.is_dir():
            raise SystemExit(f"bench: {root} not found in {name}=={version}")
        label = f"{name}-{version}" + (f"-{sub.replace('/', '.')}" if sub else "")
        sources.append((label, root))
        pinned.append({"name": name, "version": version, "kind": kind, "subfolder": sub,
                       "source": str(root)})
    tree = build_tree(sources, cache / f"tree-{mode}", models_stride)
    sample = build_sample(tree, cache / f"sample-{mode}", tf_files or len(tree["files"]))
    log(f"      tree: {tree['n_files']} files, {tree['n_lines']:,} lines; "
        f"TorchFix sample: {sample['n_files']} files, {sample['n_lines']:,} lines")

    # --- peers
    log("[2/5] peers' virtualenvs")
    peers = ensure_venv(cache / "peers-venv", {"torchfix": TORCHFIX_PIN, "ruff": RUFF_PIN, **flake8_pins})
    plain = ensure_venv(cache / "flake8-venv", dict(flake8_pins))
    # flake8 with torchlint and nothing else: the plain venv's pins plus this checkout, editable.
    # (This interpreter may hold other flake8 plugins, such as the test extra's bugbear, whose
    # cost would be counted as torchlint's.)
    with_tl = ensure_venv(cache / "flake8-torchlint-venv", dict(flake8_pins), ("-e", str(REPO))) if has_flake8 else None
    flake8_with_tl = [str(with_tl / "bin" / "flake8")] if with_tl else [sys.executable, "-m", "flake8"]
    if has_flake8 and not with_tl:
        log("      WARNING: flake8 with torchlint runs in this interpreter, with whatever other plugins it has")
    pbin = (peers / "bin") if peers else None
    ruff = str(pbin / "ruff") if peers else shutil.which("ruff")
    same_files = check_same_files(tree, ruff)
    for tool in ("torchlint", "ruff"):
        info = same_files.get(tool, {})
        if info.get("error") or info.get("missing") or info.get("extra"):
            log(f"      WARNING: {tool} would not see the same files: {info}")

    # --- the runs
    log("[3/5] timing (one tool at a time)")
    timeout = args.timeout
    tl_check = [*torchlint_cmd, "check", "--exit-zero", *no_cache, *jobs, "."]
    fl_jobs = [f"--jobs={args.jobs}"] if args.jobs else []
    tf_jobs = [f"--jobs={args.jobs}"] if args.jobs else []
    ast_cmd = [sys.executable, "-c",
               "import ast, pathlib, sys\n"
               "for p in sorted(pathlib.Path('.').rglob('*.py')):\n"
               "    try: ast.parse(p.read_bytes(), str(p))\n"
               "    except (SyntaxError, ValueError) as e: print(p, e)\n"]
    flake8_tl = [*flake8_with_tl, "--isolated", *fl_jobs, "--select=TL", "."]
    flake8_plain = [str(plain / "bin" / "flake8"), "--isolated", *fl_jobs, "--select=TL", "."] if plain else None
    flake8_tor = [str(pbin / "flake8"), "--isolated", *fl_jobs, "--select=TOR", "."] if peers else None
    torchfix = [str(pbin / "torchfix"), *tf_jobs, "."] if peers else None
    ruff_cmd = [ruff, "check", "--select", "ALL", "--no-cache", "--isolated", "--exit-zero",
                "--output-format", "concise", "."] if ruff else None

    def run_set(root: Path, plan: list, tag: str) -> list:
        out_dir = run_dir / tag
        out_dir.mkdir(exist_ok=True)
        rows = []
        for name, cmd in plan:
            if cmd is None:
                log(f"      {name}: skipped (not installed)")
                continue
            waited = wait_quiet(args.wait_quiet) if args.wait_quiet else 0.0
            row = measure(cmd, root, out_dir, name, timeout)
            row["waited_for_quiet_s"] = waited
            rows.append(row)
            log(f"      {name:<34} {row['wall_s']:8.2f} s wall {row['cpu_s']:8.2f} s CPU "
                f"{row['peak_rss_mb']:6.0f} MB  exit {row['exit_code']}"
                + ("  TIMEOUT" if row["timed_out"] else ""))
        return rows

    tree_root, sample_root = Path(tree["root"]), Path(sample["root"])
    # ast.parse first: it also warms the page cache for everyone after it.
    tree_rows = run_set(tree_root, [
        ("ast.parse (one process)", ast_cmd),
        ("torchlint check", tl_check),
        (f"ruff {RUFF_PIN} --select ALL", ruff_cmd),
        ("flake8 --select=TL (torchlint plugin)", flake8_tl if has_flake8 else None),
        ("flake8 --select=TL, no plugin", flake8_plain),
    ], "tree")
    # The result cache: a cold run that fills it, then a run over the same unchanged files.
    cache_dir = tree_root / ".torchlint_cache"
    shutil.rmtree(cache_dir, ignore_errors=True)
    tl_cached = [*torchlint_cmd, "check", "--exit-zero", *jobs, "."]
    tree_rows += run_set(tree_root, [("torchlint check, cache cold", tl_cached),
                                     ("torchlint check, cache warm", tl_cached)], "tree")
    shutil.rmtree(cache_dir, ignore_errors=True)
    # What the project index costs: the same cold run with every file linted alone.
    tree_rows += run_set(tree_root, [("torchlint check, no project index",
                                      ["env", f"{NO_INDEX_ENV}=1", *tl_check])], "tree")
    training_rows = []
    training_root = cache / "training"
    if training_root.is_dir():  # bench/training_corpus.py materialise puts the training code here
        # The corpus's own files, copied apart: the distributed corpus shares the folder.
        training_files = training_corpus.copy_corpus(training_root, run_dir / "training-corpus")
        training_root = run_dir / "training-corpus"
        n_training = len(training_files)
        n_training_lines = sum(_count_lines(p.read_bytes()) for p in training_files)
        log(f"      training-code subset ({n_training} scripts and notebooks):")
        training_rows = run_set(training_root, [
            ("torchlint check (training code)", [*torchlint_cmd, "check", "--exit-zero", "--isolated",
                                                 *no_cache, *jobs, "."]),
            ("ast.parse (training code)", ast_cmd),
        ], "training")
        for row in training_rows:
            row["n_files"], row["n_lines"] = n_training, n_training_lines
    sample_rows = []
    if not args.skip_torchfix:
        log(f"      TorchFix sample ({sample['n_files']} files):")
        serial = ([*torchlint_cmd, "check", "--exit-zero", *no_cache, "--jobs=1", "."]
                  if "--jobs" in help_text and not args.jobs else None)
        sample_rows = run_set(sample_root, [
            ("torchlint check", tl_check),
            ("torchlint check --jobs=1", serial),
            (f"TorchFix {TORCHFIX_PIN} CLI", torchfix),
            ("flake8 --select=TL (torchlint plugin)", flake8_tl if has_flake8 else None),
            ("flake8 --select=TOR (TorchFix plugin)", flake8_tor),
            ("flake8 --select=TL, no plugin", flake8_plain),
        ], "sample")

    log("      same findings across the fast paths:")
    same = same_results(tree_rows, sample_rows, tree_root, run_dir, timeout)
    for key, value in same.items():
        log(f"        {key}: {value}")

    log("[4/5] startup and linearity")
    empty = run_dir / "empty.py"
    empty.write_text("")
    starts = {
        "python -c pass": startup([sys.executable, "-c", "pass"], run_dir),
        "torchlint --version": startup([*torchlint_cmd, "--version"], run_dir),
        "torchlint check empty.py": startup([*torchlint_cmd, "check", *no_cache, "empty.py"], run_dir),
    }
    if has_flake8:
        starts["flake8 (torchlint plugin) empty.py"] = startup(
            [*flake8_with_tl, "--isolated", "--select=TL", "empty.py"], run_dir)
    if plain:
        starts["flake8 (no plugin) empty.py"] = startup(
            [str(plain / "bin" / "flake8"), "--isolated", "--select=TL", "empty.py"], run_dir)
    if peers:
        starts["torchfix empty.py"] = startup([str(pbin / "torchfix"), "empty.py"], run_dir, 5)
        starts["ruff empty.py"] = startup([ruff, "check", "--no-cache", "--isolated", "empty.py"], run_dir)
    lin = linearity(LINEARITY_LINES[mode], run_dir / "linearity", torchlint_cmd, no_cache, timeout)
    # A warm single-file check: the file was checked before and has not changed (cache hit).
    warm_dir = run_dir / "warm"
    warm_dir.mkdir(exist_ok=True)
    (warm_dir / "big.py").write_text(generate_file(2000))
    subprocess.run([*torchlint_cmd, "check", "--exit-zero", "big.py"], cwd=warm_dir, capture_output=True)
    starts["torchlint check 2,000-line file, warm cache"] = startup(
        [*torchlint_cmd, "check", "--exit-zero", "big.py"], warm_dir)

    prof = None
    if args.profile:
        log("[5/5] cProfile of torchlint -j1 on the sample")
        prof_path = run_dir / "torchlint.prof"
        prof_cmd = [sys.executable, "-m", "cProfile", "-o", str(prof_path), "-m", "torchlint",
                    "check", "--exit-zero", *no_cache, *(["--jobs=1"] if "--jobs" in help_text else []), "."]
        prof = measure(prof_cmd, sample_root, run_dir, "cprofile", timeout, sample_rss=False)
        import io
        import pstats

        buf = io.StringIO()
        stats = pstats.Stats(str(prof_path), stream=buf)
        stats.sort_stats("cumulative").print_stats(15)
        stats.sort_stats("tottime").print_stats(15)
        prof["top15"] = buf.getvalue()
        prof["path"] = str(prof_path)

    # --- report
    result = {
        "mode": mode, "started": stamp, "machine": machine_info(),
        "loadavg_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "torchlint": {"version": torchlint.__version__, "python": sys.executable, **repo_info(),
                      "cmd": tl_check, "libcst": here_versions.get("libcst")},
        "peers": {"torchfix": TORCHFIX_PIN, "ruff": RUFF_PIN, "flake8": flake8_pins},
        "corpus": pinned, "models_stride": models_stride,
        "tree": {k: v for k, v in tree.items() if k != "files"},
        "sample": {k: v for k, v in sample.items() if k != "files"},
        "file_list_sha256": hashlib.sha256("\n".join(tree["files"]).encode()).hexdigest(),
        "same_files_check": same_files,
        "tree_runs": tree_rows, "sample_runs": sample_rows, "training_runs": training_rows,
        "startup": starts, "linearity": lin, "profile": prof, "same_results": same,
    }

    def by(rows, prefix):
        return next((r for r in rows if r["name"].startswith(prefix)), None)

    ratios = {}
    tl = by(tree_rows, "torchlint")
    f_tl, f_plain = by(tree_rows, "flake8 --select=TL (torch"), by(tree_rows, "flake8 --select=TL, no")
    out = []
    m = result["machine"]
    out.append(f"torchlint {torchlint.__version__} ({result['torchlint']['commit'] or '?'}"
               f"{', src modified' if result['torchlint']['dirty'] else ''}) on {m['cpu']}, "
               f"{m['cores']} cores, {m['mem_gib']} GiB, Python {m['python']}")
    out.append("")
    pkg_counts = ", ".join(f"{k} {v['files']}" for k, v in tree["packages"].items())
    out.append(f"Tree: {tree['n_files']:,} files, {tree['n_lines']:,} lines "
               f"({pkg_counts})")
    out.append(table(tree_rows, tl, tree["n_files"], tree["n_lines"]))
    if training_rows:
        first = training_rows[0]
        out.append("")
        out.append(f"Training code (bench/training_corpus.py): {first['n_files']:,} scripts and notebooks, "
                   f"{first['n_lines']:,} lines")
        out.append(table(training_rows, first, first["n_files"], first["n_lines"]))
    if sample_rows:
        out.append("")
        out.append(f"TorchFix sample: every {sample['step']}th file of the tree, {sample['n_files']} files, "
                   f"{sample['n_lines']:,} lines ({sample['files_containing_torch']} contain 'torch'; "
                   "TorchFix parses only those)")
        out.append(table(sample_rows, by(sample_rows, "torchlint"), sample["n_files"], sample["n_lines"]))
    out.append("")
    out.append("Ratios (A ÷ B; above 1 means A takes longer):")
    for label, a, b in [
        ("torchlint ÷ ast.parse", tl, by(tree_rows, "ast.parse")),
        ("torchlint ÷ ruff --select ALL", tl, by(tree_rows, "ruff")),
        ("flake8 with torchlint ÷ flake8 without", f_tl, f_plain),
        ("torchlint ÷ TorchFix CLI (sample)", by(sample_rows, "torchlint"), by(sample_rows, "TorchFix")),
        ("flake8 TL ÷ flake8 TOR (sample)", by(sample_rows, "flake8 --select=TL (torch"),
         by(sample_rows, "flake8 --select=TOR")),
    ]:
        if a is None or b is None:
            continue
        out.append("  " + _ratio_line(label, a, b))
        if a and b and not a["timed_out"] and not b["timed_out"]:
            ratios[label] = {"wall": a["wall_s"] / b["wall_s"], "cpu": a["cpu_s"] / b["cpu_s"] if b["cpu_s"] else None}
    s_plain = by(sample_rows, "flake8 --select=TL, no")
    for label, rows, with_plugin, base in [
        ("torchlint plugin's own cost in flake8", tree_rows, f_tl, f_plain),
        ("torchlint plugin's own cost in flake8 (sample)", sample_rows,
         by(sample_rows, "flake8 --select=TL (torch"), s_plain),
        ("TorchFix plugin's own cost in flake8 (sample)", sample_rows,
         by(sample_rows, "flake8 --select=TOR"), s_plain),
    ]:
        if with_plugin and base and not with_plugin["timed_out"] and not base["timed_out"]:
            extra_w = with_plugin["wall_s"] - base["wall_s"]
            extra_c = with_plugin["cpu_s"] - base["cpu_s"]
            ratios[label] = {"wall_s": extra_w, "cpu_s": extra_c}
            out.append(f"  {label}: +{extra_w:.1f} s wall, +{extra_c:.1f} s CPU")
    result["ratios"] = ratios
    cold, warm = by(tree_rows, "torchlint check, cache cold"), by(tree_rows, "torchlint check, cache warm")
    if cold and warm:
        ratios["cache cold ÷ warm"] = {"wall": cold["wall_s"] / warm["wall_s"]}
        out.append(f"  torchlint cache: cold {cold['wall_s']:.2f} s, warm {warm['wall_s']:.2f} s "
                   f"({cold['wall_s'] / warm['wall_s']:.1f}× faster warm)")
    out.append("")
    out.append("Same findings across the fast paths: " + ", ".join(f"{k}: {v}" for k, v in same.items()))
    result["targets"] = targets(result, tree_rows, sample_rows, starts, lin, ratios, same)
    out.append("")
    out.append("Targets (issue 6):")
    for t in result["targets"]:
        out.append(f"  [{'x' if t['met'] else ' '}] {t['target']}: {t['measured']}")
    out.append("")
    out.append("Startup (median of 7 runs; TorchFix 5):")
    for label, s in starts.items():
        out.append(f"  {label:<36} {s['median_s'] * 1000:7.0f} ms")
    out.append("")
    out.append("Linearity (one generated file; torchlint):")
    for r in lin["rows"]:
        out.append(f"  {r['lines']:>7,} lines: lint_source {_fmt(r['inproc_s'], '.3f')} s "
                   f"({_fmt(r['lines'] / r['inproc_s'] if r['inproc_s'] else None, ',.0f')} lines/s), "
                   f"with gc disabled {_fmt(r['inproc_gc_off_s'], '.3f')} s; "
                   f"CLI {r['cli_wall_s']:.2f} s, {r['cli_peak_rss_mb']:.0f} MB, "
                   f"{_fmt(r['findings'], 'd')} findings")
    out.append(f"  time per line, big ÷ small: {_fmt(lin.get('per_line_ratio_inproc'), '.2f')} in-process "
               f"({_fmt(lin.get('per_line_ratio_inproc_gc_off'), '.2f')} with gc disabled), "
               f"{lin['per_line_ratio_cli']:.2f} through the CLI (includes start-up)")
    others = [r["other_load_cores"] for r in tree_rows + sample_rows if r.get("other_load_cores") is not None]
    if others:
        out.append("")
        out.append(f"'others': cores kept busy by other processes during each run, {min(others):.1f} to "
                   f"{max(others):.1f} of {m['cores']}"
                   + ("; the machine was shared, so compare CPU seconds rather than wall time"
                      if max(others) > 0.25 else "; the machine was quiet"))
    if prof:
        out.append("")
        out.append(f"cProfile (torchlint -j1 on the sample, {prof['wall_s']:.1f} s under the profiler):")
        out.append(prof["top15"])
    report = "\n".join(out)
    result["report"] = report

    json_path = args.json or (cache / "results" / f"bench-{mode}-{stamp}.json")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=1, default=str))
    print(report)
    print(f"\nJSON: {json_path}\ntool outputs: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
