"""``[tool.torchlint]`` in pyproject.toml: select, ignore, extend-select, per-file-ignores, exclude."""
from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from torchlint.engine import INTERNAL_ERROR, PARSE_ERROR
from torchlint.rules import DEFAULT_CODES, RULES_BY_CODE

_LIST_KEYS = ("select", "ignore", "extend-select", "exclude")
_KEYS = _LIST_KEYS + ("per-file-ignores",)
_ALL_CODES = frozenset(RULES_BY_CODE) | {PARSE_ERROR, INTERNAL_ERROR}


class ConfigError(Exception):
    """A configuration mistake, reported as one clear line and exit code 2."""


def expand(selectors, where: str) -> set:
    """``["TL3", "TL101"]`` -> the rule codes they name; unknown selectors are errors."""
    codes = set()
    for sel in selectors:
        sel = sel.strip().upper()
        matched = set(_ALL_CODES) if sel == "ALL" else {c for c in _ALL_CODES if c.startswith(sel)}
        if not sel.startswith("TL") and sel != "ALL" or not matched:
            known = ", ".join(sorted(RULES_BY_CODE))
            raise ConfigError(f"{where}: unknown rule code '{sel}' (known: {known})")
        codes |= matched
    return codes


@dataclass
class Config:
    root: Path = field(default_factory=Path.cwd)
    source: Optional[Path] = None  # the pyproject.toml read, if any
    select: Optional[list] = None
    ignore: list = field(default_factory=list)
    extend_select: list = field(default_factory=list)
    per_file_ignores: dict = field(default_factory=dict)
    exclude: list = field(default_factory=list)

    def where(self, key: str) -> str:
        return f"{self.source or 'command line'}: [tool.torchlint] {key}" if self.source else key

    def enabled_codes(self) -> frozenset:
        base = expand(self.select, self.where("select")) if self.select is not None else set(DEFAULT_CODES)
        base |= expand(self.extend_select, self.where("extend-select"))
        # Unreadable files and internal errors are always shown unless ignored by name.
        base |= {PARSE_ERROR, INTERNAL_ERROR}
        return frozenset(base - expand(self.ignore, self.where("ignore")))

    def validate(self) -> None:
        self.enabled_codes()
        clash = {s.upper() for s in self.select or ()} & {s.upper() for s in self.ignore}
        if clash:
            raise ConfigError(
                f"{self.where('select')} and ignore both name {', '.join(sorted(clash))}; keep it in one"
            )
        for pattern, codes in self.per_file_ignores.items():
            expand(codes, self.where(f"per-file-ignores '{pattern}'"))

    def _relative(self, path: str) -> str:
        p = Path(path)
        try:
            return (p.resolve() if p.is_absolute() else (Path.cwd() / p).resolve()).relative_to(
                self.root.resolve()
            ).as_posix()
        except ValueError:
            return PurePosixPath(p.as_posix()).as_posix()

    def ignored_for(self, path: str) -> set:
        rel = self._relative(path)
        out = set()
        for pattern, codes in self.per_file_ignores.items():
            if _matches(rel, pattern):
                out |= expand(codes, "per-file-ignores")
        return out

    def is_excluded(self, path: str) -> bool:
        rel = self._relative(path)
        return any(_matches(rel, pattern) for pattern in self.exclude)


def _matches(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*"):
        return True
    # A bare name ("build", "*_pb2.py") matches at any depth, as in .gitignore.
    return "/" not in pattern and any(fnmatch.fnmatch(part, pattern) for part in rel.split("/"))


def find_pyproject(start: Path) -> Optional[Path]:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(start: Optional[Path] = None, explicit: Optional[Path] = None) -> Config:
    path = explicit or find_pyproject((start or Path.cwd()).resolve())
    if path is None:
        return Config()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 by definition
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table ([tool.torchlint] is read from it)")
    section = tool.get("torchlint")
    config = Config(root=path.parent.resolve(), source=path)
    if section is None:
        return config
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.torchlint] must be a table")
    for key, value in section.items():
        _set(config, path, key, value)
    config.validate()
    return config


def _set(config: Config, path: Path, key: str, value) -> None:
    where = f"{path}: [tool.torchlint] {key}"
    if key not in _KEYS:
        hint = key.replace("_", "-")
        extra = f"; did you mean '{hint}'?" if hint in _KEYS else f"; valid options: {', '.join(_KEYS)}"
        raise ConfigError(f"{path}: unknown option '{key}' in [tool.torchlint]{extra}")
    if key == "per-file-ignores":
        if not isinstance(value, dict) or not all(_is_str_list(v) for v in value.values()):
            raise ConfigError(f"{where}: expected a table of pattern = [\"TL101\", ...]")
        config.per_file_ignores = dict(value)
        return
    if not _is_str_list(value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    setattr(config, key.replace("-", "_"), list(value))


def _is_str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)
