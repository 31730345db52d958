#!/usr/bin/env python3
"""Download and unpack a pinned corpus of PyTorch-heavy packages for measuring torchlint.

Usage:
    python bench/corpus.py [--cache DIR] [--only NAME,NAME] [--jobs N]

Everything goes to a cache outside the repository (default ~/.cache/torchlint-bench,
or $TORCHLINT_BENCH_CACHE, or --cache).  Nothing downloaded is ever meant to be
committed.  Downloads use plain ``python -m pip download`` against whatever package
index pip is configured for; an sdist is preferred (it often ships examples/ or
training scripts), and a wheel (a zip of the .py sources) is the fallback for a
package whose sdist is missing or cannot have its metadata prepared.

Prints one unpacked source directory per line on stdout (progress goes to stderr);
``corpus_dirs()`` returns the same list for run_corpus.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# The pinned corpus: (distribution name, version, preferred kind).
# kind "sdist" tries the source distribution first and falls back to a wheel;
# "wheel" goes straight to the wheel (no sdist on the index, or the sdist's
# metadata build needs torch or a compiler).
PINNED = [
    ("timm", "1.0.31", "sdist"),
    ("lightning", "2.6.6", "sdist"),
    ("transformers", "5.23.0", "sdist"),
    ("accelerate", "1.15.0", "sdist"),
    ("torchvision", "0.29.1", "wheel"),  # no sdist on the index
    ("pytorch-ignite", "0.5.5", "sdist"),
    ("skorch", "1.4.0", "sdist"),
    ("captum", "0.9.0", "sdist"),
    ("torchattacks", "3.5.1", "wheel"),  # no sdist for this release
    ("stable-baselines3", "2.9.2", "sdist"),
    ("pyro-ppl", "1.9.2", "sdist"),
    ("gpytorch", "1.15.2", "sdist"),
    ("botorch", "0.18.1", "sdist"),
    ("monai", "1.6.1", "wheel"),  # sdist metadata build fails
    ("kornia", "0.9.0", "sdist"),
    ("peft", "0.21.2", "sdist"),
    ("trl", "1.16.0", "sdist"),
    ("diffusers", "0.42.1", "sdist"),
    ("sentence-transformers", "6.2.0", "sdist"),
    ("torchrl", "0.14.1", "wheel"),  # sdist builds C++ extensions
    ("avalanche-lib", "0.6.0", "sdist"),
    ("pytorch-metric-learning", "2.9.0", "sdist"),
    ("mmengine", "0.10.7", "wheel"),  # sdist metadata build fails
    ("ultralytics", "8.4.190", "sdist"),
    ("fastai", "2.8.12", "sdist"),
    ("opacus", "1.6.0", "sdist"),
    ("higher", "0.2.1", "wheel"),  # sdist metadata build fails
    # learn2learn 0.2.0: sdist build needs Cython/torch and times out, no wheel for cp311: left out
    ("torchmetrics", "1.9.0", "sdist"),
    ("pytorch-tabnet", "4.1.0", "wheel"),
    ("deepspeed", "0.19.8", "sdist"),
]

DOWNLOAD_TIMEOUT_S = 240


def default_cache() -> Path:
    env = os.environ.get("TORCHLINT_BENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "torchlint-bench"


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _pip_download(name: str, version: str, binary: str, dest: Path) -> list:
    """Run pip download into an empty temp dir under dest; return the files it left."""
    tmp = Path(tempfile.mkdtemp(prefix=f".dl-{name}-", dir=dest))
    flag = "--no-binary" if binary == "sdist" else "--only-binary"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", flag, ":all:",
           f"{name}=={version}", "-d", str(tmp), "--disable-pip-version-check", "-q"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _log(f"  {name}: {binary} download timed out")
        shutil.rmtree(tmp, ignore_errors=True)
        return []
    files = [p for p in tmp.iterdir() if p.is_file()]
    if proc.returncode != 0 or not files:
        # pip may have saved the sdist and then failed preparing metadata: keep the archive.
        if not files:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
            _log(f"  {name}: {binary} download failed: {tail[0][:200]}")
            shutil.rmtree(tmp, ignore_errors=True)
            return []
    out = []
    for f in files:
        target = dest / f.name
        if target.exists():
            target.unlink()
        shutil.move(str(f), target)
        out.append(target)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def _wheel_for_platform(name: str, version: str, dest: Path) -> list:
    """A wheel for a package with only platform wheels (e.g. torchrl): ask for manylinux x86_64 cp311."""
    tmp = Path(tempfile.mkdtemp(prefix=f".dl-{name}-", dir=dest))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
           "--python-version", "3.11", f"{name}=={version}", "-d", str(tmp), "-q"]
    try:
        subprocess.run(cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    out = []
    for f in tmp.iterdir():
        target = dest / f.name
        shutil.move(str(f), target)
        out.append(target)
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def _unpack(archive: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if member.endswith(".py") or member.endswith("/"):
                    # Guard against absolute paths / .. in member names.
                    target = (into / member).resolve()
                    if into.resolve() in target.parents or target == into.resolve():
                        zf.extract(member, into)
    else:
        with tarfile.open(archive) as tf:
            members = [m for m in tf.getmembers()
                       if (m.isfile() and m.name.endswith(".py")) or m.isdir()]
            try:
                tf.extractall(into, members=members, filter="data")
            except TypeError:  # Python without extraction filters
                safe = [m for m in members if not m.name.startswith("/") and ".." not in m.name.split("/")]
                tf.extractall(into, members=safe)


def fetch_one(name: str, version: str, kind: str, cache: Path) -> dict:
    archives = cache / "archives"
    src_root = cache / "src"
    archives.mkdir(parents=True, exist_ok=True)
    target = src_root / f"{name}-{version}"
    marker = target / ".torchlint-bench.json"
    if marker.is_file():
        return json.loads(marker.read_text())
    got, used = [], None
    for binary in (("sdist", "wheel") if kind == "sdist" else ("wheel",)):
        got = _pip_download(name, version, binary, archives)
        if got:
            used = binary
            break
    if not got:
        got = _wheel_for_platform(name, version, archives)
        used = "wheel" if got else None
    if not got:
        _log(f"  {name}=={version}: SKIPPED (no download)")
        return {"name": name, "version": version, "kind": None, "dir": None}
    archive = got[0]
    if target.exists():
        shutil.rmtree(target)
    _unpack(archive, target)
    # An sdist unpacks into one top folder NAME-VER/: point at it.
    children = [c for c in target.iterdir() if c.is_dir()]
    src_dir = children[0] if used == "sdist" and len(children) == 1 else target
    info = {"name": name, "version": version, "kind": used, "archive": archive.name,
            "dir": str(src_dir)}
    marker.write_text(json.dumps(info))
    _log(f"  {name}=={version}: {used} -> {src_dir}")
    return info


def corpus(cache: Path | None = None, only=None, jobs: int = 4) -> list:
    cache = (cache or default_cache()).expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    todo = [p for p in PINNED if not only or p[0] in only]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        infos = list(pool.map(lambda p: fetch_one(p[0], p[1], p[2], cache), todo))
    if not only:
        (cache / "corpus.json").write_text(json.dumps(infos, indent=1))
    return infos


def corpus_dirs(cache: Path | None = None, only=None, jobs: int = 4) -> list:
    return [i["dir"] for i in corpus(cache, only, jobs) if i["dir"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=None,
                    help="cache dir (default $TORCHLINT_BENCH_CACHE or ~/.cache/torchlint-bench)")
    ap.add_argument("--only", default="", help="comma-separated package names to fetch")
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()} or None
    infos = corpus(args.cache, only, args.jobs)
    for info in infos:
        if info["dir"]:
            print(info["dir"])
    missing = [i["name"] for i in infos if not i["dir"]]
    if missing:
        _log(f"skipped: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
