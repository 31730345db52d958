"""Checking many files: a content-hash cache and a process pool, same results either way.

The cache is keyed on the file's bytes, its path (rules read it: pytest test
files), the torchlint version, the enabled codes and the target torch version
(rules' advice follows it), like ruff's; an entry also names the project modules
its analysis read (``model/project.py``) and is used only while they are
unchanged. It keeps
the entries of every file it has seen, up to ``MAX_ENTRIES``, dropping the
least recently used first: checking one file leaves the rest warm. Output
order never depends on which worker finishes first.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Tuple, Union

from torchlint import __version__
from torchlint.diagnostic import Diagnostic, FileError, FileResult
from torchlint.buffers import current_stamp
from torchlint.codes import NOQA_CHECKS, PARSE_ERROR
from torchlint.request import LintRequest
from torchlint.safe_io import NotRegularFile, read_regular, temporary_file
from torchlint.torch_version import TorchVersion, format_version

CACHE_DIR = ".torchlint_cache"
CACHE_DIR_ENV = "TORCHLINT_CACHE_DIR"  # as ruff's RUFF_CACHE_DIR: --cache-dir wins over it
_CACHE_FILE = "results-v2.json"  # v2: diagnostics carry fix and fix_description
_GITIGNORE_HEADER = "# created by torchlint"
# ~300 bytes an entry: a 15 MB file at most, read in well under a second; room
# for a large monorepo under a few sets of enabled codes.
MAX_ENTRIES = 50_000
_CACHE_LIMIT = 128 * 2**20  # far beyond MAX_ENTRIES of ours; a link to /dev/zero must not fill memory
_SERIAL_BELOW = 16  # a pool costs more than it saves on a handful of files


def _read(path: str):
    # A FIFO or a device named *.py in the tree would otherwise block the run
    # forever on open() or read().
    try:
        return read_regular(path), None
    except NotRegularFile:
        return None, "not a regular file; skipped"
    except OSError as exc:
        return None, f"cannot read file: {exc.strerror or exc}"


_PYTHON_SUFFIXES = (".py", ".pyi", ".pyw", ".ipynb")
_NOT_PYTHON = f"not a Python file (not {', '.join(_PYTHON_SUFFIXES)}, no python #! line); skipped"


def _is_python(path: str, data: bytes) -> bool:
    """Named files may be anything (``notes.txt``): Python by suffix, or a script by its ``#!``."""
    if path.endswith(_PYTHON_SUFFIXES):
        return True
    first = data[:200].split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def _code_fingerprint() -> str:
    """torchlint's own sources by name, size and mtime: an edited rule in a
    development install must not be answered from results of the old one."""
    package = os.path.dirname(os.path.abspath(__file__))
    parts = [__version__]
    for folder, subfolders, names in os.walk(package):
        subfolders.sort()
        for name in sorted(names):
            if name.endswith(".py"):
                stat_now = os.stat(os.path.join(folder, name))
                relative = os.path.relpath(os.path.join(folder, name), package).replace(os.sep, "/")
                parts.append(f"{relative}:{stat_now.st_size}:{stat_now.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


_CODE = None


def _key(path: str, content: str, codes: tuple, target_torch: Optional[TorchVersion] = None) -> str:
    """The cache key of a file whose bytes hash to ``content`` (``_content``), linted for
    ``codes`` with ``target_torch`` (None: the newest known, the engine's default)."""
    global _CODE
    if _CODE is None:
        _CODE = _code_fingerprint()
    target = format_version(target_torch) if target_torch is not None else "newest"
    return hashlib.sha256(f"{content}\0{path}\0{_CODE}\0{','.join(codes)}\0{target}".encode()).hexdigest()


def _content(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def lint_data(path: str, data: Union[bytes, str], request: LintRequest, **engine_options) -> FileResult:
    """One file's content, already read (bytes from disk or stdin, or an editor's
    text), linted as ``request`` says (``Settings.resolve(path).request``); notebooks
    are recognised by their suffix. ``engine_options`` (``memory``, ``cancelled``:
    see ``engine.lint_source``) apply to Python sources."""
    codes = request.codes
    if not engine_options and not path.endswith(".ipynb"):
        result = _checked_without_rules(path, data, codes)
        if isinstance(result, FileResult):
            return _without_ignored(result, codes)
        # The decoded text, when the light path decoded it: the engine's gates
        # then find the verdicts the light path's left in the memo.
        data = result or data
    options = request.engine_options
    from torchlint.engine import lint_source  # here: a run answered from the cache never imports libcst

    if path.endswith(".ipynb"):
        from torchlint.notebook import lint_notebook

        data = data.encode("utf-8") if isinstance(data, str) else data
        result = lint_notebook(data, path, request.rules, **options)
    else:
        result = lint_source(data, path, request.rules, **options, **engine_options)
    return _without_ignored(result, codes)


def _without_ignored(result: FileResult, codes: frozenset) -> FileResult:
    if PARSE_ERROR not in codes:
        # The engine reports an unreadable file whatever the rules; a config that
        # ignores TL001 by name is the one case it must not be shown.
        result.diagnostics = [d for d in result.diagnostics if d.code != PARSE_ERROR]
    return result


def _checked_without_rules(path: str, data: Union[bytes, str],
                           codes: frozenset) -> Union[FileResult, str, None]:
    """The engine's answer for a source that no enabled rule's text gate admits, found
    without importing libcst, the model or the rules (most of a start-up, and of a
    worker's time on a library tree): only Python's verdict on its syntax can be said.
    Where the engine must look instead, the decoded text (a gate matches, or TL010 is
    on and the text has a noqa comment to judge), or None (it cannot be decoded)."""
    from torchlint.rule_index import GATES, TEXT_CHECKS
    from torchlint.source import decode, python_parse
    from torchlint.text_gate import compile_gate, gate_matches

    try:
        source = decode(data) if isinstance(data, bytes) else data
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
    if codes & NOQA_CHECKS and "noqa" in source.lower():  # a noqa comment to judge (TL010, TL011)
        return source
    for code in sorted(codes & GATES.keys()):
        if gate_matches(compile_gate(GATES[code]), source, _text_check(TEXT_CHECKS.get(code))):
            return source
    result = FileResult(path)
    _, problem = python_parse(source)
    if problem is not None:
        result.diagnostics.append(problem.diagnostic(path))
    return result


def _text_check(name: Optional[str]):
    """The function of ``torchlint.text_checks`` the catalogue names (``Rule.text_check``)."""
    if name is None:
        return None
    from torchlint import text_checks

    return getattr(text_checks, name)


def _lint_path(args) -> Tuple[FileResult, Optional[str]]:
    """Read and lint one file: (result, hash of the bytes linted, None if unread).

    Workers read files themselves, so that the parent never holds the whole
    tree's bytes (nor hands a copy to every worker it forks)."""
    path, request = args
    codes = request.codes
    data, problem = _read(path)
    if data is None:  # reported like flake8's E902: a file that was not checked is a finding
        if PARSE_ERROR not in codes:  # ignored by the config: still said, as a note
            return FileResult(path, errors=[FileError(path, problem)]), None
        return FileResult(path, diagnostics=[Diagnostic(path, 1, 1, PARSE_ERROR, problem)]), None
    if not _is_python(path, data):
        return FileResult(path, errors=[FileError(path, _NOT_PYTHON)]), None
    return lint_data(path, data, request), _content(data)


def cache_folder(flag: Optional[Path], default_root: Path) -> Path:
    """Where the cache lives: ``--cache-dir``, else ``$TORCHLINT_CACHE_DIR``, else
    ``.torchlint_cache`` in ``default_root`` (``Settings.cache_root()``)."""
    if flag is not None:
        return Path(flag)
    from_env = os.environ.get(CACHE_DIR_ENV)
    if from_env:
        return Path(from_env)
    return default_root / CACHE_DIR


class ResultCache:
    """Results by key, persisted in one JSON table whose order is the order of
    last use (oldest first): the entries past ``limit`` are dropped from the front."""

    def __init__(self, folder: Path, limit: Optional[int] = None) -> None:
        self.folder = Path(folder)
        self.limit = MAX_ENTRIES if limit is None else limit
        self.entries: dict = {}
        self.used: dict = {}  # this run's hits and new results, in order of use
        entries = self._read()
        # Anything but a table of entries (a damaged or foreign file) is an empty
        # cache; this run's save replaces it.
        self.entries = entries if isinstance(entries, dict) else {}

    def _read(self):
        path = self.folder / _CACHE_FILE
        try:
            return json.loads(read_regular(path, _CACHE_LIMIT).decode("utf-8"))
        except NotRegularFile as exc:  # a FIFO would block the run, /dev/zero fill memory
            sys.stderr.write(f"torchlint: {path}: {exc.strerror}; the cache was not read\n")
        except (OSError, ValueError):  # none yet, or damaged: a miss
            pass
        return {}

    def get(self, key: str) -> Optional[FileResult]:
        """The cached result, or None: a missing entry and a damaged one are both misses."""
        record = self.entries.get(key)
        if not isinstance(record, dict):
            return None
        try:
            result = FileResult(record["path"])
            result.diagnostics = [Diagnostic(**d) for d in record["diagnostics"]]
            result.errors = [FileError(**e) for e in record["errors"]]
            if not isinstance(result.path, str) or not all(
                isinstance(d.line, int) and isinstance(d.col, int) and isinstance(d.code, str)
                and isinstance(d.message, str) for d in result.diagnostics
            ):
                return None
            result.dependencies = dict(record.get("dependencies", {}))
            if not dependencies_unchanged(result.dependencies):
                return None  # a project module it read was edited: its roles may differ
        except (TypeError, KeyError, ValueError):
            return None
        self.used[key] = record
        return result

    def put(self, key: str, result: FileResult) -> None:
        if any(e.internal for e in result.errors):
            return  # a crash is not a result worth remembering
        self.used[key] = {
            "path": result.path,
            "diagnostics": [d.record() for d in result.diagnostics],
            "errors": [e.__dict__ for e in result.errors],
            "dependencies": {path: list(stamp) for path, stamp in result.dependencies.items()},
        }

    def kept(self) -> dict:
        """What ``save`` writes: the earlier entries not used this run, then this run's,
        cut to the ``limit`` most recently used."""
        merged = {key: record for key, record in self.entries.items() if key not in self.used}
        merged.update(self.used)
        excess = len(merged) - self.limit
        if excess > 0:
            merged = dict(list(merged.items())[excess:])
        return merged

    def _nothing_new(self) -> bool:
        if not self.used:  # no file at all: an empty cache is still written, with its .gitignore
            return bool(self.entries)
        newest = list(self.entries)[-len(self.used):]
        return newest == list(self.used) and all(self.entries[key] is self.used[key] for key in newest)

    def save(self) -> None:
        """Write the kept entries atomically (a concurrent run's save may replace them);
        nothing when this run only hit the entries that were already the newest, in order."""
        if self._nothing_new():
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            ignore = self.folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text(f"{_GITIGNORE_HEADER}\n*\n")
            data = json.dumps(self.kept()).encode("utf-8")
            with temporary_file(str(self.folder), ".results-") as (fh, tmp):
                fh.write(data)
                fh.close()
                os.replace(tmp, self.folder / _CACHE_FILE)  # fails where a folder holds the name
        except OSError:
            pass  # a read-only checkout still gets its results


def dependencies_unchanged(dependencies: dict) -> bool:
    """Are the project modules a cached result read still as they were (a file's mtime and
    size, an editor buffer's text)?"""
    return all(current_stamp(path) == tuple(stamp) for path, stamp in dependencies.items())


def remove_cache(folder: Path) -> Tuple[List[Path], bool]:
    """Delete what torchlint wrote in a cache folder, then the folder when that leaves
    it empty: (the paths removed, whether the folder itself went). Other files stay:
    ``--cache-dir`` may name a folder that holds more than our cache."""
    folder = Path(folder)
    if not folder.is_dir():
        return [], False
    removed = []
    for entry in sorted(folder.iterdir()):
        if _written_by_us(entry):
            try:
                entry.unlink()
                removed.append(entry)
            except OSError:
                pass
    try:
        folder.rmdir()
    except OSError:  # not empty (someone else's files), or not ours to remove
        return removed, False
    return removed, True


def _written_by_us(entry: Path) -> bool:
    if not entry.is_file() or entry.is_symlink():
        return False
    name = entry.name
    if name == ".gitignore":
        try:
            return entry.read_text(encoding="utf-8").startswith(_GITIGNORE_HEADER)
        except (OSError, UnicodeDecodeError):
            return False
    return (name.startswith("results-v") and name.endswith(".json")) or name.startswith(".results-")


def check_files(files: List[str], request_for: Callable[[str], LintRequest], *, jobs: int = 0,
                cache_dir: Optional[Path] = None) -> List[FileResult]:
    """Lint ``files``, each as its own request says (``request_for(path)``, from
    ``config.Settings``); with ``cache_dir``, unchanged files are answered from the cache kept there."""
    keys: dict = {}  # frozenset of codes -> its sorted tuple: few distinct sets, many files
    cache = ResultCache(cache_dir) if cache_dir is not None else None
    results: List[Optional[FileResult]] = [None] * len(files)
    todo = []
    for index, path in enumerate(files):
        request = request_for(path)
        if cache is not None:
            codes = keys.setdefault(request.codes, tuple(sorted(request.codes)))
            data, _ = _read(path)  # unreadable files are reported by the worker
            hit = cache.get(_key(path, _content(data), codes, request.target_torch)) if data is not None else None
            if hit is not None:
                results[index] = hit
                continue
        todo.append((index, request))
    outcomes = _run([(files[index], request) for index, request in todo], jobs)
    for (index, request), (result, content) in zip(todo, outcomes):
        results[index] = result
        if cache is not None and content is not None:
            # The hash of what the worker read: a file edited meanwhile is
            # remembered with the content its result belongs to.
            codes = keys.setdefault(request.codes, tuple(sorted(request.codes)))
            cache.put(_key(files[index], content, codes, request.target_torch), result)
    if cache is not None:
        cache.save()
    done = [result for result in results if result is not None]
    assert len(done) == len(files)  # every file was answered, from the cache or a worker
    return done


def _run(work: list, jobs: int) -> Iterable[Tuple[FileResult, Optional[str]]]:
    cores = usable_cpu_count()
    jobs = min(jobs or cores, cores)  # more workers than cores only adds processes
    if jobs == 1 or len(work) < _SERIAL_BELOW:
        return [_lint_path(args) for args in work]
    from concurrent.futures import ProcessPoolExecutor  # ~25 ms of imports a cached or small run skips
    from concurrent.futures.process import BrokenProcessPool

    # Biggest files first, in small chunks: a worker that draws the last chunk
    # then holds small files, not a library's largest module while the other
    # cores wait (chunks of a path-sorted list differ in cost tenfold).
    order = sorted(range(len(work)), key=lambda i: -_size(work[i][0]))
    size = max(1, len(work) // (jobs * 32))
    chunks = [[work[i] for i in order[start:start + size]] for start in range(0, len(order), size)]
    with ProcessPoolExecutor(max_workers=min(jobs, len(work)), initializer=_start_worker,
                             initargs=(os.getpid(),)) as pool:
        # Futures of our own, not pool.map: on an interrupt map cancels the pending ones,
        # and on Python 3.11 the pool, broken by its workers' exit, then sets an error on
        # a cancelled future: an InvalidStateError traceback from its manager thread.
        futures = [pool.submit(_lint_chunk, chunk) for chunk in chunks]
        try:
            done = [outcome for future in futures for outcome in future.result()]
        except KeyboardInterrupt:
            _stop_workers()
            raise
        except BrokenProcessPool:  # a worker killed on its own (the OOM killer, a kill of its pid)
            raise WorkerLost("a worker process was killed; the run is incomplete") from None
    results: list = [None] * len(work)
    for i, outcome in zip(order, done):
        results[i] = outcome
    return results


def usable_cpu_count() -> int:
    """The CPUs this process may use: those it may run on (``taskset``, a container's cpuset),
    capped by a cgroup CPU quota (``docker --cpus 2``). ``os.cpu_count()`` counts the
    machine's; Python 3.13's ``os.process_cpu_count()`` does the first half of this."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity outside Linux
        cpus = os.cpu_count() or 1
    quotas = [quota for quota in map(_cpu_quota, _cgroup_quota_files()) if quota is not None]
    return max(1, min([cpus, *quotas]))


_CGROUP_ROOT = "/sys/fs/cgroup"
_OWN_CGROUP = "/proc/self/cgroup"


def _cgroup_quota_files() -> Iterable[Tuple[str, ...]]:
    """The CPU quota files of this process's cgroup and of each folder above it (a limit
    set higher up holds too; inside a container the path may be the host's): cgroup v2's
    ``cpu.max``, v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``."""
    try:
        with open(_OWN_CGROUP, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split(":", 2)  # hierarchy:controllers:path; v2's controllers are ""
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        names: Tuple[str, ...]
        if controllers == "":
            base, names = _CGROUP_ROOT, ("cpu.max",)
        elif "cpu" in controllers.split(","):
            base, names = os.path.join(_CGROUP_ROOT, "cpu"), ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        parts = [part for part in path.split("/") if part]
        for depth in range(len(parts), -1, -1):
            yield tuple(os.path.join(base, *parts[:depth], name) for name in names)


def _cpu_quota(files: Tuple[str, ...]) -> Optional[int]:
    """Whole CPUs a quota allows, rounded up; None without a quota (``max``, ``-1``) or a file."""
    try:
        values = []
        for name in files:
            with open(name, encoding="utf-8") as fh:
                values += fh.read().split()
        quota, period = int(values[0]), int(values[1])
    except (OSError, ValueError, IndexError):
        return None
    return -(-quota // period) if quota > 0 and period > 0 else None


def _lint_chunk(chunk: list) -> list:
    return [_lint_path(args) for args in chunk]


def _stop_workers() -> None:
    """End the pool's workers now (SIGTERM ends one silently), not after the files they hold."""
    import multiprocessing

    for worker in multiprocessing.active_children():
        worker.terminate()


class WorkerLost(Exception):
    """A worker process died before the run was done: an error (exit 2), not a crash."""


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:  # the worker reports it
        return 0


def _start_worker(parent: int) -> None:
    """In each worker: SIGINT, SIGTERM and SIGHUP end it at once and quietly. It inherited
    the front end's handlers, which raise to shut a pool down: a worker waiting for work
    printed a traceback when its parent was killed (the parent-death signal is SIGTERM)
    or when Ctrl-C reached the whole process group. Only the parent reports an
    interrupted run."""
    import signal

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    _watch_parent(parent)


def _watch_parent(parent: int) -> None:
    """In each worker: exit as soon as the torchlint process that started it is gone.

    A parent killed outright (SIGKILL, a crash) cannot stop its pool, and live
    workers would keep its stdout and stderr open: a caller reading them would
    wait for good. Linux tells the worker at once (a parent-death signal);
    elsewhere a thread notices the new parent within a second.
    """
    import signal
    import threading

    _ask_for_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent:  # died before the request took effect
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="torchlint-parent-watch", daemon=True).start()


def _ask_for_parent_death_signal(signum: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signum, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # the watching thread still does it
