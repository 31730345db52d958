"""Which rules run on which file: config files plus command-line options, resolved per file.

Every surface (``torchlint check``, ``--fix``, the language server, the flake8
plugin) asks ``Settings.resolve(path)`` and lints the file for exactly the
codes it returns; nobody filters findings afterwards. The semantics are
documented once, in docs/configuration.md.

Config files: the nearest of ``.torchlint.toml``, ``torchlint.toml`` (top-level
keys) or a ``pyproject.toml`` holding ``[tool.torchlint]``, looked up from each
file's folder (a ``--config FILE`` applies to every file instead). A config
may ``extend`` another file: its settings are layered on top of that file's.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Dict, Iterable, Optional, Set, Tuple


from torchlint import declared_torch
from torchlint.rule_index import RULES
from torchlint.codes import INTERNAL_ERROR, NOQA_CHECKS, PARSE_ERROR
from torchlint.request import LintRequest
from torchlint.safe_io import SMALL_FILE_LIMIT, NotRegularFile, read_regular, toml_library
from torchlint.torch_version import NEWEST_KNOWN, TorchVersion, parse_version

# Looked for in each folder, first found wins: ruff's order (.ruff.toml, ruff.toml, pyproject.toml).
CONFIG_NAMES = (".torchlint.toml", "torchlint.toml", "pyproject.toml")

_LIST_KEYS = ("select", "ignore", "extend-select", "exclude")
_BOOL_KEYS = ("respect-gitignore",)
_TARGET_KEY = "target-torch-version"
_KEYS = _LIST_KEYS + ("per-file-ignores", "extend-per-file-ignores", "extend") + _BOOL_KEYS + (_TARGET_KEY,)
_STATUS_CODES = frozenset({PARSE_ERROR, INTERNAL_ERROR})  # not rules: a file unread, a rule crashed
_ENGINE_CHECKS = NOQA_CHECKS  # not rules either: checks the engine makes of noqa comments, opt-in
# The rules' codes and defaults from the generated catalogue, not the rule modules:
# resolving settings must not import libcst (a run answered from the cache never needs it).
_ALL_CODES = frozenset(RULES) | _STATUS_CODES | _ENGINE_CHECKS
_OPT_IN = frozenset(code for code, (_, default) in RULES.items() if not default) | _ENGINE_CHECKS
_FAMILY = "TL"  # the broadest prefix; it does not name opt-in rules
MAX_EXTEND_CHAIN = 32  # config files in one chain of ``extend``, the first included (docs/configuration.md)


class ConfigError(Exception):
    """A configuration mistake, reported as one clear line and exit code 2."""


def target_version(value, where: str) -> TorchVersion:
    """A ``target-torch-version`` value (``"2.1"``, ``"1.13.1"``) as ``(major, minor)``,
    from a config file or an option; anything else is a ConfigError naming ``where``."""
    version = parse_version(value) if isinstance(value, str) else None
    if version is None:
        quoted = " (quote it: a TOML number loses trailing zeros, 2.10 reads as 2.1)" \
            if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        raise ConfigError(f"{where}: expected a torch version such as \"2.1\", got {value!r}{quoted}")
    return version


def _clean(selector: str) -> str:
    return selector.strip().upper()


def _matching(selector: str) -> frozenset:
    """Every code a selector covers, opt-in ones included (what an ignore removes)."""
    sel = _clean(selector)
    if sel == "ALL":
        return _ALL_CODES
    if not sel.startswith(_FAMILY):
        return frozenset()
    return frozenset(code for code in _ALL_CODES if code.startswith(sel))


def expand(selectors: Iterable[str], where: str) -> set:
    """``["TL3", "TL101"]`` -> the codes they cover; a selector that names none is an error."""
    codes: Set[str] = set()
    for sel in selectors:
        matched = _matching(sel)
        if not matched:
            known = ", ".join(sorted(RULES))
            raise ConfigError(f"{where}: unknown rule code '{_clean(sel)}' (known: {known})")
        codes |= matched
    return codes


def names_a_code(selector: str) -> bool:
    return bool(_matching(selector))


def _specificity(selector: str) -> int:
    """``ALL`` < ``TL`` < ``TL3`` < ``TL30`` < ``TL301``: the longer selector decides."""
    sel = _clean(selector)
    return 0 if sel == "ALL" else len(sel)


def _selected_by(selector: str) -> frozenset:
    """What a select/extend-select entry turns on: opt-in rules only when named
    (the full code or a prefix longer than ``TL``), never by ``TL`` or ``ALL``."""
    matched = _matching(selector)
    if _specificity(selector) <= len(_FAMILY):
        return matched - _OPT_IN
    return matched


@dataclass(frozen=True)
class Selection:
    """One layer of select / extend-select / ignore: a config file's, the command line's or flake8's.

    ``where`` prefixes error messages: ``"pyproject.toml: [tool.torchlint] "``, ``"--"``.
    """
    select: Optional[Tuple[str, ...]] = None  # None: keep what the layers below chose
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    where: str = "--"

    def validate(self) -> None:
        """Unknown selectors are errors; so is naming one selector in both select and ignore."""
        for key, selectors in (("select", self.select or ()), ("extend-select", self.extend_select),
                               ("ignore", self.ignore)):
            expand(selectors, f"{self.where}{key}")
        clash = {_clean(s) for s in self.select or ()} & {_clean(s) for s in self.ignore}
        if clash:
            ignore = "--ignore" if self.where == "--" else "ignore"
            raise ConfigError(f"{self.where}select and {ignore} both name "
                              f"{', '.join(sorted(clash))}; keep it in one")

    def apply(self, enabled: frozenset) -> frozenset:
        """The codes on after this layer, given those on before it (ruff's rule: within a
        layer the most specific selector wins, ignore on a tie; a ``select`` starts over)."""
        votes: Dict[str, Tuple[int, bool]] = {}
        if self.select is not None:
            # Unreadable files and rule crashes stay reported unless an ignore names them.
            votes = {code: (-1, True) for code in _STATUS_CODES}
        for sel in (*(self.select or ()), *self.extend_select):
            _vote(votes, _selected_by(sel), _specificity(sel), True)
        for sel in self.ignore:
            _vote(votes, _matching(sel), _specificity(sel), False)
        result = set() if self.select is not None else set(enabled)
        for code, (_, on) in votes.items():
            if on:
                result.add(code)
            else:
                result.discard(code)
        return frozenset(result)


def _vote(votes: dict, codes: Iterable[str], specificity: int, on: bool) -> None:
    for code in codes:
        held = votes.get(code)
        # ">=" for ignores: on equal specificity the ignore wins, whichever came first.
        if held is None or specificity > held[0] or (not on and specificity == held[0]):
            votes[code] = (specificity, on)


DEFAULT_SELECTION = Selection(select=(_FAMILY,), where="default ")


@dataclass
class Config:
    """One config file, parsed and checked (or the defaults, with ``source`` None)."""
    root: str = field(default_factory=os.getcwd)  # absolute; exclude / per-file-ignores are relative to it
    source: Optional[Path] = None
    selection: Selection = Selection(where="")
    per_file_ignores: Dict[str, frozenset] = field(default_factory=dict)  # pattern -> codes
    exclude: Tuple[str, ...] = ()
    # With ``extend``: the extended files' selections, applied before ``selection``,
    # and the folders that inherited patterns are relative to (None: ``root``).
    inherited: Tuple[Selection, ...] = ()
    ignores_root: Optional[str] = None
    exclude_root: Optional[str] = None
    # ``extend-per-file-ignores`` of this file and every file it extends: (root, patterns).
    extra_ignores: Tuple[Tuple[str, Dict[str, frozenset]], ...] = ()
    respect_gitignore: bool = True  # walks skip what .gitignore files ignore
    target_torch: Optional[TorchVersion] = None  # target-torch-version; None: found from the project
    target_torch_file: Optional[Path] = None  # the config file that set it (this one or one it extends)

    def relative(self, path: str, absolute: Optional[str] = None, root: Optional[str] = None) -> str:
        """``path`` relative to the config's folder (or ``root``), "/"-separated; as given when outside it."""
        absolute = absolute or os.path.abspath(path)
        root = root or self.root
        inside = root.rstrip(os.sep) + os.sep
        if absolute.startswith(inside):
            return absolute[len(inside):].replace(os.sep, "/")
        if absolute == root:
            return "."
        return PurePosixPath(Path(path).as_posix()).as_posix()

    def ignored_for(self, path: str) -> frozenset:
        return self._ignored_at(path, os.path.abspath(path)) if self.has_ignores() else frozenset()

    def has_ignores(self) -> bool:
        return bool(self.per_file_ignores or self.extra_ignores)

    def is_excluded(self, path: str) -> bool:
        return bool(self.exclude) and self._excluded_at(path, os.path.abspath(path))

    def _ignored_at(self, path: str, absolute: str) -> frozenset:
        out = self._ignored(self.relative(path, absolute, self.ignores_root))
        for root, patterns in self.extra_ignores:
            rel = self.relative(path, absolute, root)
            out = out.union(*(codes for pattern, codes in patterns.items() if _matches(rel, pattern)))
        return out

    def _excluded_at(self, path: str, absolute: str) -> bool:
        return self._excluded(self.relative(path, absolute, self.exclude_root))

    def _ignored(self, rel: str) -> frozenset:
        out: frozenset = frozenset()
        for pattern, codes in self.per_file_ignores.items():
            if _matches(rel, pattern):
                out |= codes
        return out

    def _excluded(self, rel: str) -> bool:
        return any(_matches(rel, pattern) for pattern in self.exclude)


def _matches(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*"):
        return True
    # A bare name ("build", "*_pb2.py") matches at any depth, as in .gitignore.
    return "/" not in pattern and any(fnmatch.fnmatch(part, pattern) for part in rel.split("/"))


# -- reading config files ------------------------------------------------------

def _read_toml(path: Path) -> dict:
    tomllib = toml_library()
    try:  # a regular file only: a FIFO would block the run, a link to /dev/zero fill memory
        return tomllib.loads(read_regular(path, SMALL_FILE_LIMIT).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:  # TOML is UTF-8 by definition
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def _section(path: Path) -> Optional[dict]:
    """The torchlint table of a config file; None for a pyproject.toml without one."""
    data = _read_toml(path)
    if path.name != "pyproject.toml":
        return data  # torchlint.toml / .torchlint.toml: the keys are at the top level
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: 'tool' must be a table ([tool.torchlint] is read from it)")
    section = tool.get("torchlint")
    if section is not None and not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.torchlint] must be a table")
    return section


def _named_file(path: Path) -> Config:
    """The file ``--config`` names: it must hold torchlint settings, or the user's intent is lost."""
    path = Path(path)
    section = _section(path)
    if section is None:
        raise ConfigError(f"{path}: no [tool.torchlint] table; nothing to configure torchlint with")
    return _parsed(path, section)


def load_file(path: Path) -> Config:
    """One config file, any of ``CONFIG_NAMES`` (or named with ``--config``), checked whole."""
    path = Path(path)
    return _parsed(path, _section(path))


def _parsed(path: Path, section: Optional[dict], extending: Tuple[Path, ...] = ()) -> Config:
    """A config file's settings, layered on top of the file its ``extend`` names.
    ``extending``: the files whose ``extend`` led here, to catch a cycle."""
    table = "[tool.torchlint] " if path.name == "pyproject.toml" else ""
    prefix = f"{path}: {table}"
    values: dict = {}
    for key, value in (section or {}).items():
        values[key] = _checked(path, table, key, value)
    own = _own_settings(path, values, prefix)
    if "extend" not in values:
        return own
    return _layered(_extended(path, values["extend"], extending), own, values)


def _own_settings(path: Path, values: dict, prefix: str) -> Config:
    selection = Selection(
        select=tuple(values["select"]) if "select" in values else None,
        extend_select=tuple(values.get("extend-select", ())),
        ignore=tuple(values.get("ignore", ())),
        where=prefix,
    )
    selection.validate()
    per_file = _patterns(values, "per-file-ignores", prefix)
    root = os.path.abspath(path.parent)
    extra = _patterns(values, "extend-per-file-ignores", prefix)
    target = values.get(_TARGET_KEY)
    return Config(root=root, source=path, selection=selection, per_file_ignores=per_file,
                  exclude=tuple(values.get("exclude", ())), extra_ignores=((root, extra),) if extra else (),
                  respect_gitignore=values.get("respect-gitignore", True),
                  target_torch=target, target_torch_file=path if target is not None else None)


def _patterns(values: dict, key: str, prefix: str) -> Dict[str, frozenset]:
    return {
        pattern: frozenset(expand(codes, f"{prefix}{key} '{pattern}'"))
        for pattern, codes in values.get(key, {}).items()
    }


def _checked(path: Path, table: str, key: str, value):
    where = f"{path}: {table}{key}"
    if key not in _KEYS:
        hint = key.replace("_", "-")
        extra = f"; did you mean '{hint}'?" if hint in _KEYS else f"; valid options: {', '.join(_KEYS)}"
        place = f" in {table.strip()}" if table else ""
        raise ConfigError(f"{path}: unknown option '{key}'{place}{extra}")
    if key == "extend":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: expected the path of a config file, got {value!r}")
        return value
    if key in ("per-file-ignores", "extend-per-file-ignores"):
        if not isinstance(value, dict) or not all(_is_str_list(v) for v in value.values()):
            raise ConfigError(f"{where}: expected a table of pattern = [\"TL101\", ...]")
        return value
    if key == _TARGET_KEY:
        return target_version(value, where)
    if key in _BOOL_KEYS:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if not _is_str_list(value):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return value


def _extended(path: Path, value: str, extending: Tuple[Path, ...]) -> Config:
    """The config that ``path``'s ``extend = value`` names, relative to ``path``'s folder."""
    target = Path(os.path.abspath(Path(path).parent / os.path.expanduser(value)))
    chain = (*extending, Path(os.path.abspath(path)))
    if target in chain:
        cycle = " -> ".join(str(p) for p in (*chain[chain.index(target):], target))
        raise ConfigError(f"{path}: extend: configs extend each other in a cycle: {cycle}")
    if len(chain) >= MAX_EXTEND_CHAIN:  # each link costs stack frames: 500 ended in RecursionError
        raise ConfigError(f"{path}: extend: more than {MAX_EXTEND_CHAIN} config files extend one another, "
                          f"starting at {chain[0]}; shorten the chain")
    if not target.is_file():
        why = "is not a file" if target.exists() else "does not exist"
        raise ConfigError(f"{path}: extend = {value!r}: {target} {why}")
    section = _section(target)
    if section is None:
        raise ConfigError(f"{path}: extend = {value!r}: {target} has no [tool.torchlint] table")
    return _parsed(target, section, chain)


def _layered(base: Config, own: Config, values: dict) -> Config:
    """``own`` on top of the config it extends, as ruff layers ``extend``: the selections
    stack (base first, so the extending file's ``select`` starts over and its ``ignore`` and
    ``extend-select`` add); ``per-file-ignores`` and ``exclude`` are the extending file's when
    it sets them, else the base's, still relative to the base's folder."""
    own.inherited = (*base.inherited, base.selection)
    own.extra_ignores = (*base.extra_ignores, *own.extra_ignores)
    if "per-file-ignores" not in values:
        own.per_file_ignores = base.per_file_ignores
        own.ignores_root = base.ignores_root or base.root
    if "exclude" not in values:
        own.exclude = base.exclude
        own.exclude_root = base.exclude_root or base.root
    if "respect-gitignore" not in values:
        own.respect_gitignore = base.respect_gitignore
    if _TARGET_KEY not in values:
        own.target_torch, own.target_torch_file = base.target_torch, base.target_torch_file
    return own


def _is_str_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _config_in(folder: str) -> Optional[Config]:
    """The config of one folder, by ``CONFIG_NAMES`` precedence; a pyproject.toml
    counts only when it holds ``[tool.torchlint]``."""
    for name in CONFIG_NAMES:
        candidate = Path(folder, name)
        if not candidate.exists() or candidate.is_dir():  # a FIFO or a device is read, and refused
            continue
        section = _section(candidate)
        if section is not None:
            return _parsed(candidate, section)
    return None


# -- per-file resolution ---------------------------------------------------------

NOTHING_SAYS = "newest known; nothing in the project says"


@dataclass(frozen=True)
class FileSettings:
    codes: frozenset  # the codes to lint this file for
    excluded: bool  # by the config's exclude (a file named on the command line is still checked)
    config: Config
    # The oldest torch the file's project supports (rules' version-dependent advice
    # follows it) and where that came from, for --show-settings.
    target_torch: TorchVersion = NEWEST_KNOWN
    target_origin: str = NOTHING_SAYS

    @property
    def request(self) -> LintRequest:
        """What the file is linted for, as every front end hands it on."""
        return LintRequest(self.codes, self.target_torch)


class Settings:
    """Config files plus overrides (command line, flake8 options) -> what applies to each file.

    Config files are looked up and parsed once per folder; a ConfigError surfaces
    when the first file under a broken config is resolved. ``config_file`` is
    ``--config``: the one config for every file; ``isolated`` reads no config
    file at all (the defaults, what the language server falls back to).
    """

    def __init__(self, overrides: Optional[Selection] = None, config_file: Optional[Path] = None,
                 isolated: bool = False, files: Optional["FileOptions"] = None,
                 target_torch: Optional[TorchVersion] = None,
                 target_option: str = "--target-torch-version") -> None:
        self.overrides = overrides
        self.files = files  # the command line's --exclude, --extend-exclude, --per-file-ignores
        # ``--target-torch-version`` (flake8's too): wins over every config and the project's
        # dependencies. ``isolated`` reads no file at all, dependency lists included.
        self.target_torch = target_torch
        self._target_option = target_option
        self._read_dependencies = not isolated
        self._project_of: Dict[str, Optional[str]] = {}  # folder -> its project's folder
        self._declared: Dict[str, Optional[declared_torch.Declared]] = {}  # project folder -> what it says
        self._fixed: Optional[Config] = _named_file(config_file) if config_file is not None else None
        if isolated and self._fixed is None:
            self._fixed = Config()
        self._nearest: Dict[str, Config] = {}  # folder -> the config that applies in it
        self._base: Dict[int, frozenset] = {}  # id(config) -> its codes before per-file-ignores

    def config_for_folder(self, folder: str) -> Config:
        if self._fixed is not None:
            return self._fixed
        folder = os.path.abspath(folder)
        walked = []
        while folder not in self._nearest:
            walked.append(folder)
            found = _config_in(folder)
            parent = os.path.dirname(folder)
            if found is not None or parent == folder:  # a config, or none up to the root
                found = found if found is not None else Config()
                break
            folder = parent
        else:  # reached a folder already resolved
            found = self._nearest[folder]
        for seen in walked:
            self._nearest[seen] = found
        return found

    def config_for(self, path: str) -> Config:
        """The config of a file (or folder) named ``path``: the nearest to the folder holding it."""
        return self.config_for_folder(os.path.dirname(os.path.abspath(path)))

    def _codes(self, config: Config) -> frozenset:
        codes = self._base.get(id(config))
        if codes is None:
            codes = DEFAULT_SELECTION.apply(frozenset())
            for layer in (*config.inherited, config.selection, self.overrides):
                if layer is not None:
                    codes = layer.apply(codes)
            self._base[id(config)] = codes
        return codes

    def resolve(self, path: str) -> FileSettings:
        absolute = os.path.abspath(path)
        folder = os.path.dirname(absolute)
        config = self.config_for_folder(folder)
        codes = self._codes(config)
        target, origin = self._target(config, folder)
        if self.files is not None:
            codes = codes - self.files.ignored_for(absolute) - config._ignored_at(path, absolute)
            excluded = self.is_excluded(path)
        elif not (config.has_ignores() or config.exclude):
            excluded = False
        else:
            # Per-file ignores always remove, whatever the selection's specificity (as ruff).
            codes = codes - config._ignored_at(path, absolute)
            excluded = config._excluded_at(path, absolute)
        return FileSettings(codes=codes, excluded=excluded, config=config, target_torch=target,
                            target_origin=origin)

    def _target(self, config: Config, folder: str) -> Tuple[TorchVersion, str]:
        """The target torch version of files in ``folder`` and where it came from: the
        command line, else the nearest config, else the project's torch requirement."""
        if self.target_torch is not None:
            return self.target_torch, f"from {self._target_option}"
        if config.target_torch is not None:
            return config.target_torch, f"from {config.target_torch_file}: {_TARGET_KEY}"
        declared = self.declared_for(folder)
        if declared is not None:
            return declared.version, f"from {declared.file}: {declared.requirement}"
        return NEWEST_KNOWN, NOTHING_SAYS

    def declared_for(self, folder: str) -> Optional[declared_torch.Declared]:
        """The torch lower bound the project holding ``folder`` declares (read once per folder)."""
        if not self._read_dependencies:
            return None
        if folder not in self._project_of:
            self._project_of[folder] = declared_torch.project_folder(folder)
        project = self._project_of[folder]
        if project is None:
            return None
        if project not in self._declared:
            try:
                self._declared[project] = declared_torch.declared_in(project)
            except NotRegularFile as exc:
                raise ConfigError(f"{exc.filename}: cannot read: {exc.strerror} (torchlint reads it for the "
                                  f"target torch version; --target-torch-version skips that)") from None
        return self._declared[project]

    def codes_for(self, path: str) -> frozenset:
        return self.resolve(path).codes

    def is_excluded(self, path: str) -> bool:
        """The config's exclude (or ``--exclude`` instead of it), plus ``--extend-exclude``."""
        files = self.files
        if files is None:
            return self.config_for(path).is_excluded(path)
        if files.exclude is None:
            excluded = self.config_for(path).is_excluded(path)
        else:
            excluded = files.matches(path, files.exclude)
        return excluded or files.matches(path, files.extend_exclude)

    def respects_gitignore(self, folder: str) -> bool:
        if self.files is not None and self.files.respect_gitignore is not None:
            return self.files.respect_gitignore
        return self.config_for_folder(folder).respect_gitignore

    def cache_root(self) -> Path:
        """Where ``.torchlint_cache`` lives: the folder of the config applying to the
        current directory (or of ``--config``); the current directory without one."""
        config = self.config_for_folder(os.getcwd())
        return Path(config.root if config.source is not None else os.getcwd())


def command_line(select: Optional[Iterable[str]], extend_select: Iterable[str],
                 ignore: Iterable[str]) -> Optional[Selection]:
    """The command line's layer (None when it names nothing), checked like a config's."""
    layer = Selection(select=tuple(select) if select else None, extend_select=tuple(extend_select),
                      ignore=tuple(ignore), where="--")
    if layer == Selection(where="--"):
        return None
    layer.validate()
    return layer


@dataclass(frozen=True)
class FileOptions:
    """The command line's file options; its patterns are relative to the working directory."""
    exclude: Optional[Tuple[str, ...]] = None  # --exclude: replaces every config's exclude
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, frozenset], ...] = ()  # added to the configs' own
    respect_gitignore: Optional[bool] = None  # --no-respect-gitignore: False
    root: str = field(default_factory=os.getcwd)

    def _config(self) -> Config:
        return Config(root=self.root)

    def matches(self, path: str, patterns: Tuple[str, ...]) -> bool:
        if not patterns:
            return False
        rel = self._config().relative(path)
        return any(_matches(rel, pattern) for pattern in patterns)

    def ignored_for(self, path: str) -> frozenset:
        rel = self._config().relative(path)
        out: frozenset = frozenset()
        for pattern, codes in self.per_file_ignores:
            if _matches(rel, pattern):
                out |= codes
        return out


def per_file_ignore(value: str) -> Tuple[str, frozenset]:
    """``--per-file-ignores "tests/*:TL301,TL5"`` -> (pattern, codes); the last ``:`` splits."""
    pattern, sep, codes = value.rpartition(":")
    selectors = [code.strip() for code in codes.split(",") if code.strip()]
    if not sep or not pattern.strip() or not selectors:
        raise ConfigError(f"--per-file-ignores {value!r}: expected PATTERN:CODES, e.g. 'tests/*:TL301,TL5'")
    return pattern.strip(), frozenset(expand(selectors, f"--per-file-ignores '{pattern.strip()}'"))
