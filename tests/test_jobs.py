"""``--jobs 0`` (the default): one worker per CPU the process may use, not per CPU the
machine has (``taskset``, a container's cpuset or CPU quota)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from torchlint import runner
from torchlint.request import LintRequest


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """Eight CPUs on the machine, all allowed, no cgroup quota; tests narrow it."""
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)
    own = tmp_path / "self-cgroup"
    own.write_text("0::/\n")
    monkeypatch.setattr(runner, "_OWN_CGROUP", str(own), raising=False)
    monkeypatch.setattr(runner, "_CGROUP_ROOT", str(tmp_path / "cgroup"), raising=False)
    return tmp_path


def _cgroup(machine, own: str, files: dict) -> None:
    (machine / "self-cgroup").write_text(own)
    for name, text in files.items():
        path = machine / "cgroup" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_cpus_the_process_may_run_on(machine, monkeypatch):
    assert runner.usable_cpu_count() == 8
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    assert runner.usable_cpu_count() == 1


@pytest.mark.parametrize("own, files, expected", [
    ("0::/\n", {"cpu.max": "200000 100000\n"}, 2),
    ("0::/\n", {"cpu.max": "max 100000\n"}, 8),
    ("0::/job/step\n", {"job/step/cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: two workers
    ("0::/job/step\n", {"job/cpu.max": "100000 100000\n", "job/step/cpu.max": "max 100000\n"}, 1),
    ("4:cpu,cpuacct:/docker/abc\n0::/\n", {"cpu/cpu.cfs_quota_us": "300000\n",  # v1, seen from inside
                                           "cpu/cpu.cfs_period_us": "100000\n"}, 3),
    ("4:cpu,cpuacct:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, 8),
])
def test_a_cgroup_cpu_quota_caps_the_count(machine, own, files, expected):
    _cgroup(machine, own, files)
    assert runner.usable_cpu_count() == expected


def test_jobs_0_with_one_usable_cpu_starts_no_pool(machine, monkeypatch, tmp_path):
    """Under ``taskset -c 0`` on an 8-CPU machine the default started 8 workers."""
    import concurrent.futures

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})

    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool for one usable CPU")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_pool)
    files = []
    for index in range(runner._SERIAL_BELOW * 2):
        path = tmp_path / f"m{index}.py"
        path.write_text("x = 1\n")
        files.append(str(path))
    results = runner.check_files(files, lambda path: LintRequest.of({"TL301"}), jobs=0)
    assert [result.path for result in results] == files


@pytest.mark.skipif(shutil.which("taskset") is None or not hasattr(os, "sched_getaffinity"),
                    reason="needs taskset (util-linux)")
def test_under_taskset_a_real_process_counts_one_cpu():
    proc = subprocess.run(["taskset", "-c", "0", sys.executable, "-c",
                           "from torchlint.runner import usable_cpu_count; print(usable_cpu_count())"],
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "1", proc.stderr
