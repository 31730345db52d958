"""The oldest torch a project says it supports, read from its own dependency lists.

When no config names ``target-torch-version``, the target is the lower bound
of the project's torch requirement: ``torch>=2.1`` and ``torch~=2.1`` give 2.1,
``torch==2.0.1`` gives 2.0, ``torch>2.1`` gives 2.1 (the bound's minor
release), ``torch<3`` has no lower bound and says nothing. Where several
requirements name torch (extras, platform markers), the lowest bound any of
them declares is the oldest torch the project still installs.

The project's folder is the nearest one, from a file's folder upwards, holding
a ``pyproject.toml`` or a ``requirements*.txt`` (the search stops at a
repository's top, the folder holding ``.git``). There, ``pyproject.toml``'s
``[project] dependencies`` and ``[project.optional-dependencies]`` (or
poetry's ``[tool.poetry.dependencies]``) are read first, then the
``requirements*.txt`` files.

Requirements are parsed with ``packaging`` (PEP 508 / PEP 440), as pip reads them;
it is imported only when a line could name torch (~30 ms a start-up need not pay).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator, List, Optional, Tuple

from torchlint.safe_io import SMALL_FILE_LIMIT, NotRegularFile, read_regular, toml_library
from torchlint.torch_version import TorchVersion

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet


# Operators that bound the version from below (``!=`` and ``<``/``<=`` do not).
_LOWER_BOUNDS = (">=", ">", "==", "~=", "===")


@dataclass(frozen=True)
class Declared:
    """A project's torch lower bound and the requirement that set it (for ``--show-settings``)."""
    version: TorchVersion
    file: str  # the file that declares it
    requirement: str  # as written there, e.g. "torch>=2.1"


def lower_bound(specifiers: SpecifierSet) -> Optional[TorchVersion]:
    """The ``(major, minor)`` of the highest lower bound in ``specifiers``; None without one.

    ``>=1.8,>=2.0`` allows only 2.0 and later: the highest bound is the one that holds.
    """
    from packaging.version import InvalidVersion, Version

    bounds = []
    for spec in specifiers:
        if spec.operator not in _LOWER_BOUNDS:
            continue
        text = spec.version[:-2] if spec.version.endswith(".*") else spec.version  # ==2.1.*
        try:
            release = Version(text).release
        except InvalidVersion:
            continue
        bounds.append((release[0], release[1] if len(release) > 1 else 0))
    return max(bounds) if bounds else None


def _torch_requirements(lines: Iterable[str]) -> Iterator[Tuple[str, Optional[TorchVersion]]]:
    """(the requirement as written, its lower bound) for each PEP 508 line naming torch."""
    for line in lines:
        if not _may_name_torch(line):
            continue  # a requirement naming torch spells it, in some case: no parse needed
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name

        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue  # an option line, a URL, a local path: pip's business, not a torch bound
        if canonicalize_name(requirement.name) == "torch":
            yield line.strip(), lower_bound(requirement.specifier)


def _may_name_torch(text: str) -> bool:
    return "torch" in text.lower()


def _lowest(found: Iterable[Tuple[str, Optional[TorchVersion]]], file: str) -> Optional[Declared]:
    bounded = [(version, text) for text, version in found if version is not None]
    if not bounded:
        return None
    version, text = min(bounded)
    return Declared(version, file, text)


def _read(path: str) -> Optional[bytes]:
    """A dependency list's bytes, None when it cannot be opened. A FIFO, a device or a huge
    file raises ``NotRegularFile``: the run cannot tell its target, and ``config`` says so."""
    try:
        return read_regular(path, SMALL_FILE_LIMIT)
    except NotRegularFile:
        raise
    except OSError:
        return None


# -- pyproject.toml ---------------------------------------------------------------

def from_pyproject(path: str) -> Optional[Declared]:
    """The torch lower bound of a pyproject.toml's dependencies; None when it names none
    (or cannot be read: a broken pyproject is reported by whatever reads it as a config)."""
    raw = _read(path)
    if raw is None:
        return None
    tomllib = toml_library()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    lines = list(_project_lines(data.get("project")))
    lines += _poetry_lines(data.get("tool"))
    return _lowest(_torch_requirements(lines), path)


def _project_lines(project) -> Iterator[str]:
    if not isinstance(project, dict):
        return
    groups = [project.get("dependencies")]
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        groups += list(extras.values())
    for group in groups:
        if isinstance(group, list):
            yield from (item for item in group if isinstance(item, str))


def _poetry_lines(tool) -> List[str]:
    """poetry's ``torch = ">=2.1"`` (or ``{version = "^2.1"}``, or a list of those) as PEP 508 lines."""
    poetry = tool.get("poetry") if isinstance(tool, dict) else None
    deps = poetry.get("dependencies") if isinstance(poetry, dict) else None
    if not isinstance(deps, dict):
        return []
    lines = []
    for name, value in deps.items():
        if not _may_name_torch(str(name)):
            continue
        from packaging.utils import canonicalize_name

        if canonicalize_name(str(name)) != "torch":
            continue
        for entry in value if isinstance(value, list) else [value]:
            constraint = entry.get("version") if isinstance(entry, dict) else entry
            if isinstance(constraint, str):
                specifiers = _poetry_constraint(constraint)
                if specifiers is not None:
                    lines.append(f"torch{specifiers}")
    return lines


def _poetry_constraint(constraint: str) -> Optional[str]:
    """A poetry constraint as PEP 440 specifiers: ``^2.1`` and ``~2.1`` start at 2.1 (their
    upper bounds do not matter here), a bare ``2.1`` is ``==2.1``, ``*`` bounds nothing."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    parts = []
    for part in constraint.split(","):
        part = part.strip()
        if not part or part == "*":
            continue
        if part.startswith("^") or (part.startswith("~") and not part.startswith("~=")):
            part = ">=" + part.lstrip("^~").strip()
        elif part[0].isdigit():
            part = "==" + part
        parts.append(part)
    try:
        return str(SpecifierSet(",".join(parts))) if parts else None
    except InvalidSpecifier:
        return None


# -- requirements.txt -------------------------------------------------------------

def from_requirements(path: str) -> Optional[Declared]:
    """The torch lower bound in a pip requirements file; None when it names none."""
    raw = _read(path)
    if raw is None:
        return None
    return _lowest(_torch_requirements(_requirement_lines(raw.decode("utf-8", "replace"))), path)


def _requirement_lines(text: str) -> Iterator[str]:
    """The requirement lines of a pip requirements file: continuations joined, comments
    and option lines (``-r``, ``--index-url``, ``-e``) dropped."""
    for line in text.replace("\\\n", "").splitlines():
        line = line.split(" #", 1)[0].split("\t#", 1)[0].strip()
        if line and not line.startswith(("#", "-")):
            yield line


# -- the project's folder -----------------------------------------------------------

def requirement_files(folder: str) -> List[str]:
    """The ``requirements*.txt`` files of a folder, by name."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, name) for name in sorted(names)
            if name.startswith("requirements") and name.endswith(".txt")]


def project_folder(folder: str) -> Optional[str]:
    """The nearest folder, from ``folder`` up, holding a pyproject.toml or a requirements*.txt;
    None when there is none up to the repository's top (or the filesystem's)."""
    folder = os.path.abspath(folder)
    while True:
        if os.path.isfile(os.path.join(folder, "pyproject.toml")) or requirement_files(folder):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder or os.path.exists(os.path.join(folder, ".git")):
            return None
        folder = parent


def declared_in(project: str) -> Optional[Declared]:
    """The torch lower bound a project folder declares: pyproject.toml first, then requirements*.txt."""
    pyproject = os.path.join(project, "pyproject.toml")
    found = from_pyproject(pyproject) if os.path.isfile(pyproject) else None
    if found is not None:
        return found
    bounds = [d for d in map(from_requirements, requirement_files(project)) if d is not None]
    return min(bounds, key=lambda d: d.version) if bounds else None
