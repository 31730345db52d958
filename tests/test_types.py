"""The type check: mypy, at the strictness pyproject.toml's [tool.mypy] sets, finds nothing in src/.

CONTRIBUTING.md says what is checked where. Skipped only where mypy is not installed
(the test extra installs it).
"""
from __future__ import annotations

import os

import pytest

from conftest import ROOT

api = pytest.importorskip("mypy.api")


def test_mypy_finds_no_errors_in_src():
    here = os.getcwd()
    os.chdir(ROOT)  # mypy reads the [tool.mypy] of the pyproject.toml where it runs
    try:
        stdout, stderr, status = api.run([])
    finally:
        os.chdir(here)
    assert status == 0, stdout + stderr
    assert "Success: no issues found" in stdout
