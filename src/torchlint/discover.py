"""Which files a ``torchlint check PATH...`` run looks at."""
from __future__ import annotations

import os
import sys
from typing import Iterable, List, Tuple

# Never worth linting: VCS data, caches, virtualenvs, build output.
SKIP_DIRS = frozenset(
    ".git .hg .svn __pycache__ .venv venv .tox .nox node_modules .mypy_cache .pytest_cache "
    ".ruff_cache .torchlint_cache build dist .eggs site-packages .ipynb_checkpoints".split()
)

SUFFIXES = (".py", ".ipynb")  # notebooks: their code cells, see notebook.py


def discover(paths: Iterable[str], settings) -> Tuple[List[str], List[str]]:
    """(files to check in a stable order, paths that do not exist).

    ``settings`` is a ``config.Settings``: each name found in a folder is matched
    against the ``exclude`` of the config that applies to that folder."""
    files, missing = [], []
    for path in paths:
        if os.path.isfile(path):
            files.append(path)  # named explicitly: checked even if excluded or not .py
        elif os.path.isdir(path):
            files.extend(_walk(path, settings))
        elif os.path.exists(path):
            files.append(path)  # a FIFO, socket or device: the runner says why it is not checked
        else:
            missing.append(path)
    seen, unique = set(), []
    for f in files:
        key = os.path.normpath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, missing


def _unreadable(exc: OSError) -> None:
    """os.walk skips a folder it cannot list; say so rather than lose its files quietly."""
    sys.stderr.write(f"torchlint: {exc.filename}: cannot read directory: {exc.strerror or exc}\n")


def _walk(top: str, settings) -> Iterable[str]:
    # Symbolic links are not followed (os.walk's default, and islink below): a
    # link can point out of the tree or back into it (a loop). A link named on
    # the command line is checked like any other path given there.
    for folder, dirs, names in os.walk(top, onerror=_unreadable):
        config = settings.config_for_folder(folder)
        dirs[:] = sorted(
            d for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
            and not config.is_excluded(os.path.join(folder, d))
        )
        for name in sorted(names):
            path = os.path.join(folder, name)
            if name.endswith(SUFFIXES) and not os.path.islink(path) and not config.is_excluded(path):
                yield os.path.normpath(path)
