"""Which files a ``torchlint check PATH...`` run looks at."""
from __future__ import annotations

import os
import sys
from typing import Dict, Iterable, List, Tuple

from torchlint.safe_io import SMALL_FILE_LIMIT, NotRegularFile, read_regular

# Never worth linting: VCS data, caches, virtualenvs, build output.
SKIP_DIRS = frozenset(
    ".git .hg .svn __pycache__ .venv venv .tox .nox node_modules .mypy_cache .pytest_cache "
    ".ruff_cache .torchlint_cache build dist .eggs site-packages .ipynb_checkpoints".split()
)

SUFFIXES = (".py", ".ipynb")  # notebooks: their code cells, see notebook.py


def discover(paths: Iterable[str], settings, force_exclude: bool = False) -> Tuple[List[str], List[str]]:
    """(files to check in a stable order, paths that do not exist).

    ``settings`` is a ``config.Settings``: each name found in a folder is matched
    against the ``exclude`` that applies to it (``Settings.is_excluded``), and
    what a ``.gitignore`` ignores is skipped unless ``respect-gitignore`` is off.
    ``force_exclude``: a file named here is dropped too when excluded."""
    files, missing = [], []
    for path in paths:
        if force_exclude and os.path.exists(path) and settings.is_excluded(path):
            continue
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
        key = _identity(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, missing


def _identity(path: str):
    """One file reached by two names (``a.py`` and ``./a.py``, a symbolic or a hard link to it)
    is one file, checked and fixed once under the first name: its device and inode, or the
    normalised name where it cannot be looked at (the runner reports why)."""
    try:
        st = os.stat(path)
    except OSError:
        return os.path.normpath(path)
    return st.st_dev, st.st_ino


def _unreadable(exc: OSError) -> None:
    """os.walk skips a folder it cannot list; say so rather than lose its files quietly."""
    sys.stderr.write(f"torchlint: {exc.filename}: cannot read directory: {exc.strerror or exc}\n")


def _walk(top: str, settings) -> Iterable[str]:
    # Symbolic links are not followed (os.walk's default, and islink below): a
    # link can point out of the tree or back into it (a loop). A link named on
    # the command line is checked like any other path given there.
    ignores = GitIgnores(top) if settings.respects_gitignore(top) else None
    for folder, dirs, names in os.walk(top, onerror=_unreadable):
        dirs[:] = sorted(
            d for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
            and not settings.is_excluded(os.path.join(folder, d))
            and not (ignores is not None and ignores.ignored(folder, d, is_dir=True))
        )
        for name in sorted(names):
            path = os.path.join(folder, name)
            if (name.endswith(SUFFIXES) and not os.path.islink(path) and not settings.is_excluded(path)
                    and not (ignores is not None and ignores.ignored(folder, name, is_dir=False))):
                yield os.path.normpath(path)


class GitIgnores:
    """The ``.gitignore`` files that apply in a walked tree, as git reads them: each
    file's patterns are relative to its own folder, and a deeper file overrides a
    shallower one (its ``!pattern`` re-includes). Files above the walked folder
    count up to the repository's root (the folder holding ``.git``)."""

    def __init__(self, top: str) -> None:
        self._chains: Dict[str, list] = {}  # folder -> [(folder, spec), ...], deepest last
        top = os.path.abspath(top)
        chain: list = []
        for folder in _ancestors_in_repo(top):
            chain = chain + _spec_in(folder)
        self._chains[top] = chain

    def _chain(self, folder: str) -> list:
        folder = os.path.abspath(folder)
        chain = self._chains.get(folder)
        if chain is None:  # os.walk goes top-down: the parent's chain is known
            chain = self._chain(os.path.dirname(folder)) + _spec_in(folder)
            self._chains[folder] = chain
        return chain

    def ignored(self, folder: str, name: str, is_dir: bool) -> bool:
        path = os.path.join(os.path.abspath(folder), name)
        for root, spec in reversed(self._chain(folder)):
            rel = os.path.relpath(path, root).replace(os.sep, "/") + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include
            if verdict is not None:
                return verdict
        return False


def _spec_in(folder: str) -> list:
    """``[(folder, spec)]`` for the folder's own ``.gitignore``; ``[]`` without one."""
    path = os.path.join(folder, ".gitignore")
    try:
        lines = read_regular(path, SMALL_FILE_LIMIT).decode("utf-8", "replace").splitlines()
    except NotRegularFile as exc:  # a FIFO would block the walk, /dev/zero fill memory
        sys.stderr.write(f"torchlint: {path}: {exc.strerror}; nothing is ignored by it\n")
        return []
    except OSError:  # none, or unreadable: nothing ignored, as git does
        return []
    from pathspec import GitIgnoreSpec

    return [(folder, GitIgnoreSpec.from_lines(lines))]


def _ancestors_in_repo(top: str) -> List[str]:
    """``top``'s ancestors down from the repository root, then ``top``; ``[top]`` outside a repository."""
    folders = [top]
    folder = top
    while not os.path.exists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return [top]
        folder = parent
        folders.append(folder)
    return folders[::-1]
