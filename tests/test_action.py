"""The GitHub Action (``action.yml``) run as a runner runs a composite action: its
inputs' defaults filled in, ``${{ ... }}`` expressions substituted, each ``bash``
step run as ``bash --noprofile --norc -eo pipefail`` with ``GITHUB_OUTPUT`` and
``GITHUB_ACTION_PATH``, outputs read back, the job stopped at the first failing
step. The job's Python is a fresh virtualenv that sees this one's packages, so the
default install (the action's own checkout) builds only torchlint itself."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import ROOT, STORED_LOSS
from test_formats import _validate

yaml = pytest.importorskip("yaml")
# Each step of the action may run 600 s (a pip install among them), more than pyproject.toml's
# ten minutes a test leave a test of several steps.
pytestmark = pytest.mark.timeout(1800)

ACTION = ROOT / "action.yml"
NUMPY_ON_OUTPUT = "import torch\nmodel = torch.nn.Linear(4, 2)\nout = model(torch.randn(8, 4))\nprint(out.numpy())\n"
# The only expressions the action may use: a dotted name. Anything else (operators,
# functions) would need GitHub's evaluator, which this runner does not pretend to be.
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
NAME = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")
STEP_KEYS = {"name", "id", "shell", "env", "run"}


@dataclass
class StepResult:
    id: str
    returncode: int
    output: str
    outputs: Dict[str, str] = field(default_factory=dict)


@dataclass
class JobResult:
    steps: List[StepResult]
    outputs: Dict[str, str]

    @property
    def failed(self) -> bool:
        return self.steps[-1].returncode != 0

    def step(self, step_id: str) -> StepResult:
        return next(step for step in self.steps if step.id == step_id)


def _substitute(text: str, context: dict) -> str:
    def value(match: re.Match) -> str:
        expression = match.group(1)
        if not NAME.fullmatch(expression):
            raise AssertionError(f"this runner substitutes dotted names only, not {expression!r}")
        found = context
        for part in expression.split("."):
            found = found.get(part, "") if isinstance(found, dict) else ""
        return str(found)

    return EXPRESSION.sub(value, text)


def run_action(action: dict, with_: Dict[str, str], workspace: Path, temp: Path) -> JobResult:
    """Run the composite ``action`` as a GitHub runner would with these ``with:`` inputs."""
    assert action["runs"]["using"] == "composite"
    unknown = set(with_) - set(action["inputs"])
    assert not unknown, f"inputs the action does not declare: {unknown}"  # GitHub warns; a typo in a test is a bug
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update(with_)
    context = {"inputs": inputs, "steps": {}, "github": {"action_path": str(ROOT), "workspace": str(workspace)},
               "runner": {"temp": str(temp)}}
    results = []
    for number, step in enumerate(action["runs"]["steps"]):
        assert set(step) <= STEP_KEYS, f"step {number} uses {set(step) - STEP_KEYS}: teach the runner first"
        assert step["shell"] == "bash"
        step_id = step.get("id", f"step{number}")
        output_file = temp / f"output-{step_id}"
        output_file.write_text("")
        env = {key: value for key, value in os.environ.items() if not key.startswith(("GITHUB_", "INPUT_"))}
        env.update(CI="true", GITHUB_ACTIONS="true", GITHUB_ACTION_PATH=str(ROOT), GITHUB_WORKSPACE=str(workspace),
                   GITHUB_OUTPUT=str(output_file), RUNNER_TEMP=str(temp))
        env.update({name: _substitute(str(value), context) for name, value in step.get("env", {}).items()})
        script = temp / f"{step_id}.sh"
        script.write_text(_substitute(step["run"], context))
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
        context["steps"][step_id] = {"outputs": outputs}
        results.append(StepResult(step_id, proc.returncode, proc.stdout, outputs))
        if proc.returncode != 0:
            break
    outputs = {name: _substitute(spec["value"], context) for name, spec in action.get("outputs", {}).items()}
    return JobResult(results, outputs)


@pytest.fixture(scope="module")
def job_python(tmp_path_factory) -> str:
    """A fresh virtualenv (as actions/setup-python gives a job) whose path also holds this
    environment's site-packages: torchlint's dependencies are there, so pip installs only
    torchlint, and ``torchlint==<this version>`` is already satisfied."""
    home = tmp_path_factory.mktemp("job-python")
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    child_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                capture_output=True, text=True, check=True).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages")]
    Path(child_site, "parent-environment.pth").write_text("\n".join(ours) + "\n")
    return str(python)


@pytest.fixture
def repository(tmp_path) -> Path:
    """A checked-out repository with one finding without a fix and one with a safe fix."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "train.py").write_text(STORED_LOSS.format(suffix=""))
    (repo / "src" / "infer.py").write_text(NUMPY_ON_OUTPUT)
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["torch>=2.1"]\n')
    return repo


def _action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def test_default_inputs_install_the_actions_own_checkout_annotate_and_write_sarif(job_python, repository, tmp_path):
    job = run_action(_action(), {"python": job_python, "sarif": "torchlint.sarif"}, repository, tmp_path)

    install = job.step("install")
    assert install.returncode == 0, install.output
    assert f"installing {ROOT} into {job_python}" in install.output
    assert re.search(r"^torchlint \d+\.\d+", install.output, re.M)

    check = job.step("check")
    assert job.failed and check.returncode == 1, check.output  # findings fail the job
    annotations = sorted(line for line in check.output.splitlines() if line.startswith("::"))
    assert [re.sub(r"::TL\d+ .*", "", line) for line in annotations] == [
        "::error file=src/infer.py,line=4,col=7,endLine=4,endColumn=18,title=TL402",
        "::error file=src/train.py,line=10,col=9,endLine=10,endColumn=28,title=TL301",
    ]

    assert job.outputs == {"sarif": "torchlint.sarif"}
    sarif = json.loads((repository / "torchlint.sarif").read_text())
    _validate(sarif)
    results = sarif["runs"][0]["results"]
    assert sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in results) == [
        ("TL301", "src/train.py"), ("TL402", "src/infer.py")]


def test_fix_version_paths_and_args(job_python, repository, tmp_path):
    """Safe fixes applied first, then a clean report: the job passes. A pinned version
    already in the job's Python is kept (pip says so) rather than fetched again."""
    from torchlint import __version__

    job = run_action(_action(), {"python": job_python, "fix": "true", "version": __version__,
                                 "paths": "src/infer.py\nsrc/train.py\n", "args": "--ignore TL301"}, repository, tmp_path)
    assert not job.failed, job.steps[-1].output
    assert f"Requirement already satisfied: torchlint=={__version__}" in job.step("install").output
    check = job.step("check")
    assert "1 × TL402" in check.output
    assert not [line for line in check.output.splitlines() if line.startswith("::")]
    assert "out.detach().numpy()" in (repository / "src" / "infer.py").read_text()
    assert not (repository / "torchlint.sarif").exists() and job.outputs == {"sarif": ""}


def test_arguments_are_split_but_never_expanded(job_python, repository, tmp_path):
    """A glob or ``$(...)`` in an input is passed to torchlint as written, not run or expanded."""
    job = run_action(_action(), {"python": job_python, "version": "0.1.0", "paths": "src/*.py",
                                 "args": "--select $(touch pwned)"}, repository, tmp_path)
    check = job.step("check")
    assert check.returncode == 2, check.output  # torchlint's usage error for those words
    assert not (repository / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_a_wrong_fix_value_fails_with_an_annotation(job_python, repository, tmp_path):
    job = run_action(_action(), {"python": job_python, "version": "0.1.0", "fix": "yes"}, repository, tmp_path)
    check = job.step("check")
    assert check.returncode == 2
    assert "::error title=torchlint::fix must be true or false, not 'yes'" in check.output


def test_inputs_reach_the_scripts_through_env_only():
    """GitHub pastes ``${{ }}`` into a script before bash sees it: an input holding
    ``$(...)`` would run. The action's scripts hold no expression; env carries them."""
    for step in _action()["runs"]["steps"]:
        assert "${{" not in step["run"], step["name"]
