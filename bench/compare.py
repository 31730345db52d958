#!/usr/bin/env python3
"""torchlint beside its peers: the same files checked by every tool, in one command.

    python bench/compare.py --json docs/comparison/cpu-2core.json   # what docs/comparison.md shows
    python bench/compare.py --tools torchlint,ruff                  # a subset (names: --list)
    python bench/compare.py --files a.py b.ipynb --json out.json    # other files than the corpus

The corpus is the training corpus of ``bench/training_corpus.py`` (public repositories pinned by
commit; ``python bench/training_corpus.py materialise`` writes it into the cache first). Each peer
is installed at a pinned version into a virtualenv of its own under the cache
(``$TORCHLINT_BENCH_CACHE`` or ``~/.cache/torchlint-bench``, in ``compare/``), because their
dependencies exclude each other (TorchFix needs libcst < 1.6, dslinter pylint 2.12, pylint-ml
pylint 3). torchlint runs from the interpreter that runs this script.

For every tool the script first measures what it offers, on two small probe files it writes
itself: whether it reads notebooks (a notebook and a ``.py`` file with the same code: does the
notebook get the ``.py`` file's findings?), whether ``--fix`` rewrites code, whether its
distribution registers a flake8 plugin, and whether a language-server command in its ``--help``
answers an LSP ``initialize`` request. Then it runs the tool over the corpus's ``.py`` files, and
the notebooks apart for the tools the probe found reading them (``--repeat N`` times each, the
fastest run's times kept), and records files given, parse errors, the tool's own count of files
checked where it prints one, findings in total and by code, wall and CPU time and the exit
status. Where a code of TorchFix, torch-preflight or dslinter has a torchlint code that answers
it, the script counts the lines where both report, from either side.

A peer that cannot be installed or run here is recorded with the reason, in one line, and the
rest goes on. Raw outputs stay in the cache; the JSON (``--json``) holds the aggregates.
``python -m torchlint.docs`` renders docs/comparison.md from docs/comparison/*.json.
"""
from __future__ import annotations

import argparse
import ast
import datetime as _dt
import glob
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import bench as bench_tools  # noqa: E402 - bench/ is not a package: measure(), machine_info()
import training_corpus  # noqa: E402 - the corpus, its cache and what is materialised

from torchlint import __version__ as TORCHLINT_VERSION  # noqa: E402
from torchlint.torchfix_codes import ANSWERS as TORCHFIX_ANSWERS  # noqa: E402

SCHEMA = 1
RUN_TIMEOUT_S = 3600
PROBE_TIMEOUT_S = 300
INSTALL_TIMEOUT_S = 1800

# torch-preflight's rules (its docs/rules.md) and the torchlint rules that find the same thing.
# TG005-TG008, TG010, TG012-TG014 have no torchlint answer in this checkout.
PREFLIGHT_ANSWERS: Dict[str, Tuple[str, ...]] = {
    "TG001": ("TL301", "TL304"),  # a tensor stored across iterations with its graph
    "TG002": ("TL101",),  # evaluation without no_grad/inference_mode
    "TG003": ("TL201",),  # backward in a loop without zero_grad
    "TG004": ("TL601",),  # DataLoader without num_workers/pin_memory in CUDA code
    "TG011": ("TL104",),  # eval() in an epoch loop and never train() again
}
# dslinter's PyTorch messages (their text in dslinter/checkers/) with a torchlint answer.
DSLINTER_ANSWERS: Dict[str, Tuple[str, ...]] = {
    "W5517": ("TL201",),  # gradient-clear-pytorch: backward and step without zero_grad
    "W9998": ("TL104",),  # mode-toggling-pytorch: training mode not switched back
}


class UsageError(Exception):
    """Bad input or a missing prerequisite: one line, exit 2."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def last_line(text: str, skip: Tuple[str, ...] = ("WARNING:", "[notice]")) -> str:
    """The last line of a tool's complaint that says something (pip's warnings left out)."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(skip)]
    return lines[-1][:300] if lines else "no message"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------------------
# Interpreters and virtualenvs.


def python_version(python: str) -> Optional[str]:
    """'3.10' for an interpreter that runs, else None (a pyenv shim without that version fails)."""
    try:
        proc = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def find_python(versions: Optional[Sequence[str]]) -> Optional[str]:
    """This interpreter when its version will do, else one of ``versions`` on PATH or under pyenv."""
    if versions is None or python_version(sys.executable) in versions:
        return sys.executable
    for version in versions:
        candidates = [shutil.which(f"python{version}")]
        candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
        for candidate in candidates:
            if candidate and python_version(candidate) == version:
                return candidate
    return None


def make_venv(path: Path, python: str, pins: Dict[str, str]) -> Tuple[Optional[Path], str]:
    """A virtualenv at path with these pins installed from the package index; (None, why) if not."""
    marker = path / "compare-pins.json"
    want = json.dumps({"python": python_version(python), "pins": pins}, sort_keys=True)
    if (path / "bin" / "python").exists() and marker.is_file() and marker.read_text() == want:
        return path, ""
    log(f"  creating {path}: {' '.join(f'{k}=={v}' for k, v in pins.items())}")
    if path.exists():
        shutil.rmtree(path)
    try:
        made = subprocess.run([python, "-m", "venv", str(path)], capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            return None, f"python -m venv failed: {last_line(made.stderr)}"
        pip = subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", *[f"{k}=={v}" for k, v in pins.items()]],
                             capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"pip install did not finish in {INSTALL_TIMEOUT_S} s"
    if pip.returncode != 0:
        return None, f"pip install failed on Python {python_version(python)}: {last_line(pip.stderr)}"
    marker.write_text(want)
    return path, ""


_DISTRIBUTIONS = """
import json, importlib.metadata as m
out = {}
for d in m.distributions():
    eps = [ep.name for ep in d.entry_points if ep.group == "flake8.extension"]
    out[d.metadata["Name"]] = {"version": d.version, "flake8": sorted(eps)}
print(json.dumps(out))
"""


def distributions(python: str) -> Dict[str, dict]:
    """{normalised name: {"name", "version", "flake8": [its flake8.extension entry points]}} of an interpreter."""
    proc = subprocess.run([python, "-c", _DISTRIBUTIONS], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return {}
    return {normalise(name): dict(info, name=name) for name, info in json.loads(proc.stdout).items()}


# ---------------------------------------------------------------------------
# What every tool run yields.


class Finding:
    __slots__ = ("path", "cell", "line", "code")

    def __init__(self, path: str, cell: Optional[int], line: int, code: str) -> None:
        self.path, self.cell, self.line, self.code = path, cell, line, code

    def where(self) -> "Where":
        return (self.path, self.cell, self.line)


Where = Tuple[str, Optional[int], int]  # file, notebook cell, line


class Parsed:
    """A run's findings, its status messages (files or cells it could not parse) and its own file count."""

    def __init__(self, findings: List[Finding], parse_errors: List[Finding],
                 reported_checked: Optional[int] = None) -> None:
        self.findings, self.parse_errors, self.reported_checked = findings, parse_errors, reported_checked


class ToolFailed(Exception):
    """The tool ran but its output cannot be read: one line saying why."""


def relative(path: str, cwd: Path) -> str:
    return Path(os.path.relpath(os.path.join(cwd, path), cwd)).as_posix()


# ---------------------------------------------------------------------------
# The tools.


class Tool:
    """One linter: how to install it, run it, fix with it, and read what it prints."""

    key = ""
    label = ""
    distribution = ""  # whose version and flake8 entry points are reported
    pins: Dict[str, str] = {}
    pythons: Optional[Tuple[str, ...]] = None  # interpreters it installs on; None: this one
    python_note = ""
    reports_cells = False  # its findings in notebooks carry a cell number

    def __init__(self) -> None:
        self.python = sys.executable
        self.venv: Optional[Path] = None
        self.versions: Dict[str, str] = {}

    # -- setting up ------------------------------------------------------------------------

    def setup(self, venvs: Path) -> str:
        """Install the tool; '' when it is ready, else one line saying why it is not."""
        python = find_python(self.pythons)
        if python is None:
            return f"needs Python {' or '.join(self.pythons or ())}, none found here{self.python_note}"
        venv, why = make_venv(venvs / self.key, python, self.pins)
        if venv is None:
            return why + self.python_note
        self.venv, self.python = venv, str(venv / "bin" / "python")
        return ""

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name) if self.venv else name

    # -- running -----------------------------------------------------------------------------

    def check_command(self, files: Sequence[str]) -> List[str]:
        raise NotImplementedError

    def help_commands(self) -> List[List[str]]:
        """Top-level help first: a language-server command is looked for there."""
        raise NotImplementedError

    def fix_command(self, files: Sequence[str]) -> List[str]:
        """The check command with --fix: only run when --fix is in the tool's help."""
        return self.check_command(files) + ["--fix"]

    def server_command(self, name: str) -> List[str]:
        return self.help_commands()[0][:-1] + [name]

    def parse(self, stdout: str, stderr: str, cwd: Path) -> Parsed:
        raise NotImplementedError

    @staticmethod
    def read_json(stdout: str, stderr: str) -> Any:
        try:
            return json.loads(stdout)
        except ValueError:
            raise ToolFailed(f"no JSON on stdout: {last_line(stderr)}") from None

    @staticmethod
    def split(findings: Iterable[Finding], status: Set[str]) -> Parsed:
        """Findings apart from the tool's messages that a file (or cell) could not be parsed."""
        found: List[Finding] = []
        errors: List[Finding] = []
        for finding in findings:
            (errors if finding.code in status else found).append(finding)
        return Parsed(found, errors)


class Torchlint(Tool):
    key = "torchlint"
    label = "torchlint (default rules)"
    distribution = "torchlint"
    reports_cells = True

    def setup(self, venvs: Path) -> str:
        return ""  # the interpreter running this script has it

    def rule_arguments(self) -> List[str]:
        return []

    def base(self) -> List[str]:
        return [self.python, "-m", "torchlint"]

    def check_command(self, files: Sequence[str]) -> List[str]:
        return [*self.base(), "check", "--isolated", "--no-cache", "--output-format", "json",
                *self.rule_arguments(), *files]

    def help_commands(self) -> List[List[str]]:
        return [[*self.base(), "--help"], [*self.base(), "check", "--help"]]

    def parse(self, stdout: str, stderr: str, cwd: Path) -> Parsed:
        # TL001: a file or notebook cell it could not read; TL002: a rule crashed there
        return self.split((Finding(relative(item["path"], cwd), item.get("cell"), item["line"], item["code"])
                           for item in self.read_json(stdout, stderr)), {"TL001", "TL002"})


class TorchlintAll(Torchlint):
    key = "torchlint-all"
    label = "torchlint (every rule)"

    def rule_arguments(self) -> List[str]:
        from torchlint.rules import RULES_BY_CODE  # only here: the other tools never need the rules

        # TL names the default rules only; the opt-in ones are named one by one
        opt_in = sorted(code for code, rule in RULES_BY_CODE.items() if not rule.default)
        return ["--select", "TL", "--extend-select", ",".join(opt_in)]


_TORCHFIX_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>TOR\d+) ", re.M)


class TorchFix(Tool):
    key = "torchfix"
    label = "TorchFix 0.7.0"
    distribution = "TorchFix"
    pins = {"TorchFix": "0.7.0"}  # needs libcst < 1.6: it cannot share torchlint's interpreter

    def check_command(self, files: Sequence[str]) -> List[str]:
        # --show-stderr: the files it fails to parse are said on stderr, and only there
        return [self.bin("torchfix"), "--show-stderr", *files]

    def help_commands(self) -> List[List[str]]:
        return [[self.bin("torchfix"), "--help"]]

    def parse(self, stdout: str, stderr: str, cwd: Path) -> Parsed:
        found = [Finding(relative(m["path"], cwd), None, int(m["line"]), m["code"])
                 for m in _TORCHFIX_LINE.finditer(stdout)]
        errors = [Finding(relative(m.group(1), cwd), None, 0, "parse-error")
                  for m in re.finditer(r"^Failed to codemod (.+)$", stderr, re.M)]
        checked = re.search(r"Finished checking (\d+) files", stderr)
        if checked is None:
            raise ToolFailed(f"no 'Finished checking' line: {last_line(stderr)}")
        return Parsed(found, errors, int(checked.group(1)))


class TorchPreflight(Tool):
    key = "torch-preflight"
    label = "torch-preflight 0.5.0"
    distribution = "torch-preflight"
    # Its check command never imports torch (its README: "No GPU. No PyTorch."; it runs here
    # without one), so none is installed: the [vram] extra would pull a torch build.
    pins = {"torch-preflight": "0.5.0"}

    def check_command(self, files: Sequence[str]) -> List[str]:
        return [self.bin("torch-preflight"), "check", "-f", "json", *files]

    def help_commands(self) -> List[List[str]]:
        return [[self.bin("torch-preflight"), "--help"], [self.bin("torch-preflight"), "check", "--help"]]

    def parse(self, stdout: str, stderr: str, cwd: Path) -> Parsed:
        raw = self.read_json(stdout, stderr)
        found = [Finding(relative(d["path"], cwd), None, d["line"], d["code"]) for d in raw["diagnostics"]]
        errors = [Finding(relative(f["path"], cwd), None, 0, "parse-error") for f in raw.get("failures", [])]
        return Parsed(found, errors, raw.get("summary", {}).get("files_checked"))


class Ruff(Tool):
    key = "ruff"
    label = "ruff 0.17.6 --select ALL"
    distribution = "ruff"
    pins = {"ruff": "0.17.6"}  # the version bench/bench.py times
    reports_cells = True

    def check_command(self, files: Sequence[str]) -> List[str]:
        return [self.bin("ruff"), "check", "--isolated", "--no-cache", "--select", "ALL",
                "--output-format", "json", *files]

    def help_commands(self) -> List[List[str]]:
        return [[self.bin("ruff"), "--help"], [self.bin("ruff"), "check", "--help"]]

    def parse(self, stdout: str, stderr: str, cwd: Path) -> Parsed:
        # older releases gave syntax errors no code
        return self.split((Finding(relative(item["filename"], cwd), item.get("cell"), item["location"]["row"],
                                   item.get("code") or "invalid-syntax")
                           for item in self.read_json(stdout, stderr)), {"invalid-syntax"})


# pylint's own messages about a file it could not read or parse.
PYLINT_STATUS = ("E0001", "F0001", "F0002", "F0010")


class Pylint(Tool):
    key = "pylint"
    label = "pylint 4.1.4"
    distribution = "pylint"
    pins = {"pylint": "4.1.4"}
    plugin_modules: Tuple[str, ...] = ()  # a pylint plugin: the modules --load-plugins may name

    def __init__(self) -> None:
        super().__init__()
        self.rcfile = ""
        self.plugin = ""
        self.plugin_messages: List[str] = []

    def setup(self, venvs: Path) -> str:
        why = super().setup(venvs)
        if not why:
            # an empty rcfile: no pylintrc or pyproject.toml of the corpus or the home folder applies
            self.rcfile = str(venvs / "empty-pylintrc")
            Path(self.rcfile).write_text("")
        return why or (self.find_plugin() if self.plugin_modules else "")

    def find_plugin(self) -> str:
        """Load the plugin and list the messages it adds; '' on success, else why it cannot load."""
        base = self.listed_messages([])
        failures = []
        for module in self.plugin_modules:
            try:
                added = self.listed_messages([f"--load-plugins={module}"]) - base
            except ToolFailed as exc:
                failures.append(f"--load-plugins={module}: {exc}")
                continue
            self.plugin, self.plugin_messages = module, sorted(added)
            return ""
        return f"pylint {self.versions_of('pylint')} cannot load it: " + "; ".join(failures)

    def versions_of(self, name: str) -> str:
        return distributions(self.python).get(name, {}).get("version", "?")

    def listed_messages(self, extra: List[str]) -> Set[str]:
        proc = subprocess.run([self.bin("pylint"), *extra, "--list-msgs"], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)
        if proc.returncode != 0:
            raise ToolFailed(last_line(proc.stderr))
        return set(re.findall(r"^:[\w-]+ \(([A-Z]\d{4})\)", proc.stdout, re.M))

    def check_command(self, files: Sequence[str]) -> List[str]:
        select: List[str] = []
        if self.plugin:
            # the plugin's own messages (and pylint's parse errors); pylint's others are the pylint row
            select = [f"--load-plugins={self.plugin}", "--disable=all",
                      "--enable=" + ",".join(self.plugin_messages + list(PYLINT_STATUS))]
        return [self.bin("pylint"), f"--rcfile={self.rcfile}", "--output-format=json", "--score=n",
                *select, *files]

    def help_commands(self) -> List[List[str]]:
        return [[self.bin("pylint"), "--help"]]

    def parse(self, stdout: str, stderr: str, cwd: Path) -> Parsed:
        # pylint prints nothing at all when nothing is enabled for the files
        return self.split((Finding(relative(item["path"], cwd), None, item["line"], item["message-id"])
                           for item in self.read_json(stdout or "[]", stderr)), set(PYLINT_STATUS))


class Dslinter(Pylint):
    key = "dslinter"
    label = "dslinter 2.0.9 (pylint plugin)"
    distribution = "dslinter"
    pins = {"dslinter": "2.0.9"}
    # dslinter pins astroid 2.9, whose wrapt (< 1.14) does not build on Python 3.11 and later
    pythons = ("3.10", "3.9", "3.8")
    python_note = " (dslinter 2.0.9 pins astroid 2.9, whose wrapt does not build on Python 3.11+)"
    plugin_modules = ("dslinter",)


class PylintMl(Pylint):
    key = "pylint-ml"
    label = "pylint-ml 0.0.1 (pylint plugin)"
    distribution = "pylint-ml"
    pins = {"pylint-ml": "0.0.1", "pylint": "3.3.9"}  # the newest pylint it allows (< 4)
    # its package has no register(); its checkers are registered by pylint_ml.plugin
    plugin_modules = ("pylint_ml", "pylint_ml.plugin")


TOOLS = (Torchlint, TorchlintAll, TorchFix, TorchPreflight, Dslinter, PylintMl, Ruff, Pylint)


# ---------------------------------------------------------------------------
# Probes: what a tool offers, measured on two small files written here.

# A training function with something for each tool to report: a loss kept with its graph
# (torchlint TL301, torch-preflight TG001), torch.load without weights_only (TorchFix TOR102), a
# DataLoader without workers or a seeded generator (torch-preflight TG004, dslinter W5512), an
# unused import (ruff, pylint); and something each fixer rewrites: .numpy() on outputs that carry
# a graph (torchlint TL402, a safe fix), log(1 + x) (torchlint's opt-in TL704, safe).
PROBE_SOURCE = '''\
import os

import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, criterion, device="cuda"):
    loader = DataLoader(dataset, batch_size=32)
    losses, history = [], []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        logits = model(x)
        loss = criterion(logits, y)
        losses.append(loss)
        loss.backward()
        optimizer.step()
        history.append(logits.softmax(-1).cpu().numpy())
    return losses, history


def resume(model, path):
    model.load_state_dict(torch.load(path))


def log_scores(model, x):
    with torch.no_grad():
        return torch.log(1 + model(x))
'''


def probe_notebook(source: str) -> str:
    """A notebook whose one code cell is ``source``."""
    lines = source.splitlines(keepends=True)
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "probe", "metadata": {},
                           "outputs": [], "source": lines}],
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                             "language_info": {"name": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1) + "\n"


def run_quiet(cmd: List[str], cwd: Path, timeout: float = PROBE_TIMEOUT_S) -> Tuple[int, str, str]:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {timeout} s"
    except OSError as exc:
        return -1, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def lint_probe(tool: Tool, name: str, folder: Path) -> Set[Tuple[int, str]]:
    """{(line, code)} of the tool's findings on one probe file (lines within the cell in a notebook)."""
    _, out, err = run_quiet(tool.check_command([name]), folder)
    try:
        parsed = tool.parse(out, err, folder)
    except ToolFailed:
        return set()
    return {(f.line, f.code) for f in parsed.findings}


def notebook_probe(tool: Tool, folder: Path) -> dict:
    """Does a notebook get the findings of the same code in a .py file, on the same lines?"""
    # One folder each: pylint 2 given probe.ipynb lints the module "probe", probe.py when it is beside it.
    for kind, text in (("py", PROBE_SOURCE), ("ipynb", probe_notebook(PROBE_SOURCE))):
        (folder / kind).mkdir(parents=True, exist_ok=True)
        (folder / kind / f"probe.{kind}").write_text(text)
    as_py = lint_probe(tool, "probe.py", folder / "py")
    as_notebook = lint_probe(tool, "probe.ipynb", folder / "ipynb")
    same = len(as_py & as_notebook)
    # most of the .py file's findings, each at its line in the cell: a tool reading the JSON
    # text as Python may share a file-level message at line 1, never most of them
    return {"py_findings": len(as_py), "notebook_findings": len(as_notebook), "same_line_and_code": same,
            "reads_notebooks": bool(as_py) and same * 2 > len(as_py)}


def help_text(tool: Tool, folder: Path) -> List[str]:
    return [run_quiet(cmd, folder, 120)[1] for cmd in tool.help_commands()]


def fix_probe(tool: Tool, helps: List[str], folder: Path) -> dict:
    """Is --fix in its help, and does it rewrite the probe file into code that still parses?"""
    if not any(re.search(r"(?<![\w-])--fix(?![\w-])", text) for text in helps):
        return {"fix_option": False}
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "probe.py"
    target.write_text(PROBE_SOURCE)
    status, _, err = run_quiet(tool.fix_command(["probe.py"]), folder)
    after = target.read_text()
    try:
        ast.parse(after)
        parses = True
    except SyntaxError:
        parses = False
    changed = [i + 1 for i, (a, b) in enumerate(zip(PROBE_SOURCE.splitlines(), after.splitlines())) if a != b]
    return {"fix_option": True, "rewrote": after != PROBE_SOURCE, "lines_changed": changed,
            "parses_after": parses, "exit_code": status}


_SERVER_IN_HELP = re.compile(r"^\s{2,}(server|lsp|language-server)\b", re.M)


def lsp_probe(tool: Tool, helps: List[str], folder: Path, timeout: float = 60) -> dict:
    """A language-server command in the top-level help, and whether it answers ``initialize``."""
    found = _SERVER_IN_HELP.search(helps[0]) if helps else None
    if found is None:
        return {"command": None}
    cmd = tool.server_command(found.group(1))
    answer = lsp_initialize(cmd, folder, timeout)
    return {"command": found.group(1), **answer}


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_messages(stream, into: "queue.Queue[Optional[dict]]") -> None:
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                into.put(None)
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length is None:
            continue
        try:
            into.put(json.loads(stream.read(length)))
        except ValueError:
            continue


def lsp_initialize(cmd: List[str], cwd: Path, timeout: float) -> dict:
    """Send ``initialize`` over stdio; the server's name when it answers with its capabilities."""
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
    except OSError as exc:
        return {"answers_initialize": False, "why": str(exc)}
    assert proc.stdin is not None and proc.stdout is not None
    messages: "queue.Queue[Optional[dict]]" = queue.Queue()
    threading.Thread(target=_read_messages, args=(proc.stdout, messages), daemon=True).start()
    result: dict = {"answers_initialize": False}
    try:
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": {"processId": os.getpid(), "rootUri": cwd.resolve().as_uri(),
                                            "capabilities": {}}}))
        proc.stdin.flush()
        deadline = _dt.datetime.now() + _dt.timedelta(seconds=timeout)
        while _dt.datetime.now() < deadline:
            try:
                message = messages.get(timeout=max(0.1, (deadline - _dt.datetime.now()).total_seconds()))
            except queue.Empty:
                break
            if message is None:
                result["why"] = "the server exited"
                break
            if message.get("id") == 1:
                answer = message.get("result") or {}
                result = {"answers_initialize": "capabilities" in answer,
                          "server": (answer.get("serverInfo") or {}).get("name")}
                break
        else:
            result["why"] = f"no answer in {timeout} s"
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
    except OSError:
        pass  # it went away; what it answered before is kept
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return result


def flake8_probe(tool: Tool) -> dict:
    """The flake8.extension entry points the tool's own distribution registers."""
    dists = distributions(tool.python)
    mine = dists.get(normalise(tool.distribution), {})
    tool.versions = {info["name"]: info["version"] for key, info in dists.items()
                     if key in {normalise(n) for n in (tool.distribution, *tool.pins)}
                     or key in ("libcst", "astroid", "pylint", "flake8")}
    return {"entry_points": mine.get("flake8", [])}


def newest_release(name: str) -> Optional[str]:
    """The newest version the package index offers (pip's own client; None when it cannot say)."""
    status, out, _ = run_quiet([sys.executable, "-m", "pip", "index", "versions", name,
                                "--disable-pip-version-check"], Path.cwd(), 300)
    found = re.match(r"\S+ \(([^)]+)\)", out.strip())
    return found.group(1) if status == 0 and found else None


def probe(tool: Tool, folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    helps = help_text(tool, folder)
    return {"notebooks": notebook_probe(tool, folder / "notebook"),
            "fix": fix_probe(tool, helps, folder / "fix"),
            "flake8_plugin": flake8_probe(tool),
            "language_server": lsp_probe(tool, helps, folder)}


# ---------------------------------------------------------------------------
# The run over the corpus.


def portable(argv: List[str], venvs: Path) -> List[str]:
    """A command as the report shows it: no path of this machine (the cache is CACHE)."""
    return ["python" if arg == sys.executable else arg.replace(str(venvs), "CACHE/compare/venvs") for arg in argv]


def file_kinds(files: Iterable[str]) -> Dict[str, int]:
    kinds = Counter("ipynb" if f.endswith(".ipynb") else "py" for f in files)
    return {"py": kinds.get("py", 0), "ipynb": kinds.get("ipynb", 0)}


def run_tool(tool: Tool, files: List[str], cwd: Path, out_dir: Path, name: str, timeout: float,
             quiet_s: float = 0, repeat: int = 1) -> Tuple[dict, List[Finding]]:
    """``repeat`` runs over the files: the fastest one's times (a shared machine only ever adds
    time), every run's wall and CPU, the findings; the findings are kept in memory for overlaps."""
    rows, outputs = [], set()
    for attempt in range(repeat):
        waited = bench_tools.wait_quiet(quiet_s) if quiet_s else 0.0
        row = bench_tools.measure(tool.check_command(files), cwd, out_dir, f"{name}-{attempt + 1}", timeout)
        if row["timed_out"]:
            raise ToolFailed(f"did not finish in {timeout:.0f} s")
        row["waited"] = waited
        rows.append(row)
        stdout = Path(row["stdout"]).read_text(errors="replace")
        stderr = Path(row["stderr"]).read_text(errors="replace")
        parsed = tool.parse(stdout, stderr, cwd)
        outputs.add(tuple(sorted((f.path, f.cell or 0, f.line, f.code) for f in parsed.findings + parsed.parse_errors)))
    best = min(rows, key=lambda r: r["wall_s"])
    by_code = Counter(f.code for f in parsed.findings)
    record = {
        "command": tool.check_command(["FILES"]), "files_given": len(files),
        "wall_s": round(best["wall_s"], 3), "cpu_s": round(best["cpu_s"], 3),
        "wall_s_each": [round(r["wall_s"], 3) for r in rows], "cpu_s_each": [round(r["cpu_s"], 3) for r in rows],
        "peak_rss_mb": round(best["peak_rss_mb"], 1), "exit_code": best["exit_code"],
        "waited_for_quiet_s": round(best["waited"], 1),
        "other_load_cores": None if best["other_load_cores"] is None else round(best["other_load_cores"], 2),
        "same_findings_every_run": len(outputs) == 1,
        "findings": len(parsed.findings),
        "files_with_findings": len({f.path for f in parsed.findings}),
        "by_code": dict(sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0]))),
        "parse_errors": len(parsed.parse_errors),
        "files_with_parse_errors": len({f.path for f in parsed.parse_errors}),
        "tool_reported_files_checked": parsed.reported_checked,
    }
    return record, parsed.findings


def overlaps(peer: List[Finding], torchlint: List[Finding], answers: Dict[str, Tuple[str, ...]],
             peer_files: Set[str]) -> dict:
    """Per peer code with a torchlint answer: the lines it reports (a tool may report one line twice),
    and those where torchlint (every rule) reports an answering code too; the same from torchlint's
    side, on the files the peer checked."""
    tl_at: Dict[Where, Set[str]] = {}
    for f in torchlint:
        tl_at.setdefault(f.where(), set()).add(f.code)
    peer_at: Dict[Where, Set[str]] = {}
    for f in peer:
        peer_at.setdefault(f.where(), set()).add(f.code)

    def count(found: Dict[Where, Set[str]], other: Dict[Where, Set[str]], partners: Dict[str, Tuple[str, ...]],
              key: str) -> Dict[str, dict]:
        out: Dict[str, dict] = {}
        for where, codes in found.items():
            for code in sorted(codes & set(partners)):
                entry = out.setdefault(code, {key: list(partners[code]), "lines": 0, "lines_with_partner": 0})
                entry["lines"] += 1
                entry["lines_with_partner"] += bool(other.get(where, set()) & set(partners[code]))
        return dict(sorted(out.items()))

    # torchlint's codes and the peer codes each answers: the table read the other way round
    answering: Dict[str, Tuple[str, ...]] = {}
    for peer_code, tl_codes in answers.items():
        for tl_code in tl_codes:
            answering[tl_code] = answering.get(tl_code, ()) + (peer_code,)
    on_peer_files = {where: codes for where, codes in tl_at.items() if where[0] in peer_files}
    return {"peer_codes": count(peer_at, tl_at, answers, "answered_by"),
            "torchlint_codes": count(on_peer_files, peer_at, answering, "answers")}


ANSWER_TABLES = {"torchfix": TORCHFIX_ANSWERS, "torch-preflight": PREFLIGHT_ANSWERS, "dslinter": DSLINTER_ANSWERS}


def compare(tools: List[Tool], files: List[str], cwd: Path, work: Path, venvs: Path, timeout: float,
            quiet_s: float = 0, repeat: int = 1) -> dict:
    """Set up, probe and run every tool; a tool that cannot is recorded with why, and the rest go on."""
    results: Dict[str, dict] = {}
    findings: Dict[str, List[Finding]] = {}
    checked: Dict[str, Set[str]] = {}
    notebooks = [f for f in files if f.endswith(".ipynb")]
    for tool in tools:
        log(f"{tool.key}: setting up")
        entry: dict = {"label": tool.label}
        results[tool.key] = entry
        why = tool.setup(venvs)
        entry["python"] = python_version(tool.python)
        if tool.pins:  # a peer from the index (torchlint is this checkout)
            entry["newest_on_index"] = newest_release(tool.distribution)
        if why:
            entry.update(status="not run", why=why)
            if tool.venv:  # installed but unusable: which versions, all the same
                flake8_probe(tool)
            entry["versions"] = tool.versions
            log(f"  not run: {why}")
            continue
        log(f"{tool.key}: probing")
        entry["features"] = probe(tool, work / "probes" / tool.key)
        entry["versions"] = tool.versions
        # every tool gets the same .py files; the notebooks go, in a run of their own, to the
        # tools the probe saw reading them (pylint would lint a notebook's JSON as Python)
        batches = [("py", [f for f in files if not f.endswith(".ipynb")])]
        if entry["features"]["notebooks"]["reads_notebooks"]:
            batches.append(("ipynb", notebooks))
        entry["runs"], findings[tool.key] = {}, []
        try:
            for kind, batch in batches:
                if not batch:
                    continue
                log(f"{tool.key}: checking {len(batch)} {kind} files")
                run, found = run_tool(tool, batch, cwd, work, f"{tool.key}-{kind}", timeout, quiet_s, repeat)
                run["command"] = portable(run["command"], venvs)
                entry["runs"][kind] = run
                findings[tool.key] += found
                checked.setdefault(tool.key, set()).update(batch)
                log(f"  {run['findings']} findings, {run['wall_s']:.1f} s wall, exit {run['exit_code']}")
            entry["status"] = "ran"
        except ToolFailed as exc:
            entry.update(status="failed", why=str(exc))
            findings.pop(tool.key)
            log(f"  failed: {exc}")
    reference = findings.get("torchlint-all", findings.get("torchlint"))
    out: Dict[str, dict] = {}
    if reference is not None:
        for key, answers in ANSWER_TABLES.items():
            if key in findings:
                out[key] = overlaps(findings[key], reference, answers, checked[key])
    return {"tools": results, "overlaps": out,
            "overlaps_against": "torchlint-all" if "torchlint-all" in findings else "torchlint"}


# ---------------------------------------------------------------------------


def corpus_files(args: argparse.Namespace) -> Tuple[Path, List[str], dict]:
    """(folder the tools run in, files relative to it, what the corpus is)."""
    if args.files:
        paths = [Path(f).resolve() for f in args.files]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise UsageError(f"not a file: {missing[0]}")
        root = Path(os.path.commonpath([str(p.parent) for p in paths]))
        return root, [p.relative_to(root).as_posix() for p in paths], {"name": "files given on the command line"}
    root = training_corpus.training_root(args.cache)
    repos = training_corpus.load_corpus()
    present, missing = training_corpus.materialised_files(root, repos)
    if missing:
        raise UsageError(f"{len(missing)} corpus files are not under {root} (first: {missing[0]}); "
                         "run python bench/training_corpus.py materialise first")
    return root, present, {"name": "training", "definition": "bench/training/corpus.json",
                           "repositories": [{"repo": r["repo"], "commit": r["commit"], "files": len(r["files"])}
                                            for r in repos]}


def select_tools(names: Optional[str]) -> List[Tool]:
    known = {cls.key: cls for cls in TOOLS}
    if not names:
        return [cls() for cls in TOOLS]
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise UsageError(f"unknown tool {unknown[0]!r}; known: {', '.join(known)}")
    return [known[n]() for n in wanted]


def torchlint_commit() -> str:
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip()


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--tools", help="comma-separated subset of the tools (default: all; see --list)")
    ap.add_argument("--list", action="store_true", help="list the tools and exit")
    ap.add_argument("--files", nargs="+", help="check these files instead of the training corpus")
    ap.add_argument("--cache", type=Path, default=None,
                    help="default $TORCHLINT_BENCH_CACHE or ~/.cache/torchlint-bench")
    ap.add_argument("--json", type=Path, default=None, help="where the results go (default: the cache)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each tool N times and keep the fastest run's times (default: 1)")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before each run, wait up to S seconds for other processes to go idle")
    ap.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="seconds per tool run (default: %(default)s)")
    return ap.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.list:
        for cls in TOOLS:
            print(f"{cls.key:16} {cls.label}")
        return 0
    try:
        if args.repeat < 1:
            raise UsageError("--repeat needs 1 or more")
        tools = select_tools(args.tools)
        root, files, corpus = corpus_files(args)
    except UsageError as exc:
        print(f"compare.py: {exc}", file=sys.stderr)
        return 2
    cache = args.cache.expanduser() if args.cache else bench_tools.default_cache()
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    work = cache / "compare" / "runs" / stamp
    work.mkdir(parents=True, exist_ok=True)
    corpus["files"] = file_kinds(files)
    result = {
        "schema": SCHEMA,
        "command": "python bench/compare.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:])),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": bench_tools.machine_info(),
        "torchlint": {"version": TORCHLINT_VERSION, "commit": torchlint_commit()},
        "corpus": corpus,
    }
    result["repeat"] = args.repeat
    result.update(compare(tools, files, root, work, cache / "compare" / "venvs", args.timeout, args.wait_quiet,
                          args.repeat))
    out = args.json or (cache / "compare" / f"compare-{stamp}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    log(f"JSON: {out}\nraw outputs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
