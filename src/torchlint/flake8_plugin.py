"""The flake8 entry point: ``flake8`` (or ``flake8 --select=TL``) runs torchlint's rules.

Which rules run on a file is decided as for ``torchlint check``
(docs/configuration.md): the torchlint config nearest the file, then, on top,
flake8's ``--select``, ``--extend-select``, ``--ignore`` and ``--extend-ignore``
where they name TL codes, as the CLI's options are. ``TL`` itself in a
select list only switches the plugin on and keeps the config's choice.
Opt-in rules run only when named (``TL106``, ``TL10``), never by ``TL``
alone, as flake8-bugbear does with its B9 codes. flake8's ``--isolated`` is
not visible to plugins: torchlint's config files are read even then.

The target torch version is flake8's ``--target-torch-version`` (also
``target-torch-version`` in flake8's config), else found as for ``torchlint
check``: the torchlint config, then the torch requirement of the file's project.

flake8 handles ``# noqa``, ``--per-file-ignores`` and syntax errors (E999)
itself, so the plugin only reports findings. A rule that raises becomes a
TL002 finding instead of aborting flake8's run; a broken torchlint config
stops the run with its message, as it does for the CLI.
"""
from __future__ import annotations

from typing import Optional

from torchlint import __version__
from torchlint import config as config_mod
from torchlint.engine import INTERNAL_ERROR, lint_source
from torchlint.torch_version import TorchVersion

_TARGET_OPTION = "--target-torch-version"


def _ours(selectors) -> tuple:
    """The selectors of a flake8 option that name torchlint codes (E501 and TL9 do not)."""
    ours = []
    for selector in selectors or ():
        selector = selector.strip()
        if selector and "TL".startswith(selector):
            ours.append("TL")  # flake8 matches by prefix: "T" covers every TL code
        elif selector.upper() != "ALL" and config_mod.names_a_code(selector):
            ours.append(selector)
    return tuple(ours)


def flake8_layer(options) -> Optional[config_mod.Selection]:
    """flake8's options as a selection layer; None when they leave the torchlint config alone.

    ``TL`` (or ``T``) in ``--select`` / ``--extend-select`` is how flake8 users
    switch the plugin on (an explicit select list must hold it), so it keeps the
    config's selection; narrower selectors (``TL3``, ``TL106``) decide as on the
    command line. A ``--select`` naming no TL code means flake8 drops every TL
    finding: nothing need run.
    """
    extend = _ours(getattr(options, "extend_select", None))
    ignore = _ours(options.ignore) + _ours(getattr(options, "extend_ignore", None))
    select = None
    if options.select is not None:
        chosen = _ours(options.select)
        if "TL" in chosen:
            extend += tuple(s for s in chosen if s != "TL")
        else:
            select = chosen
    extend = tuple(s for s in extend if s != "TL")
    if select is None and not extend and not ignore:
        return None
    return config_mod.Selection(select=select, extend_select=extend, ignore=ignore, where="flake8 --")


class TorchlintChecker:
    name = "torchlint"
    version = __version__

    _layer: Optional[config_mod.Selection] = None
    _target: Optional[TorchVersion] = None  # --target-torch-version
    _settings: Optional[config_mod.Settings] = None  # made on first use, in each process

    @classmethod
    def add_options(cls, parser) -> None:
        parser.add_option(_TARGET_OPTION, metavar="X.Y", parse_from_config=True, default=None,
                          help="torchlint: the oldest torch the code must run on, e.g. 2.1 (default: "
                               "the torchlint config's, else the project's torch requirement)")

    @classmethod
    def parse_options(cls, options) -> None:
        cls._layer = flake8_layer(options)
        value = getattr(options, "target_torch_version", None)
        try:
            cls._target = config_mod.target_version(value, f"flake8 {_TARGET_OPTION}") if value else None
        except config_mod.ConfigError as exc:
            from flake8.exceptions import ExecutionError  # flake8 prints its message, exits 1

            raise ExecutionError(f"torchlint: {exc}") from None
        cls._settings = None

    @classmethod
    def settings(cls) -> config_mod.Settings:
        if cls._settings is None:
            cls._settings = config_mod.Settings(cls._layer, target_torch=cls._target,
                                                target_option=f"flake8 {_TARGET_OPTION}")
        return cls._settings

    def __init__(self, tree, lines, filename) -> None:
        # ``tree`` makes flake8 treat us as an AST plugin (one call per file,
        # none for files it could not parse); the engine reads ``lines`` and
        # uses the tree, at no cost, for its second gate.
        self.tree = tree
        self.lines = lines
        self.filename = filename

    def run(self):
        # flake8 names stdin "stdin" (or --stdin-display-name): its config is the cwd's.
        try:
            resolved = self.settings().resolve(self.filename)
        except config_mod.ConfigError as exc:
            from flake8.exceptions import ExecutionError  # flake8 prints its message, exits 1

            raise ExecutionError(f"torchlint: {exc}") from None
        if resolved.excluded:
            return
        request = resolved.request
        source = "".join(self.lines)
        if source.startswith("\ufeff"):
            source = source[1:]
        result = lint_source(source, self.filename, request.rules, apply_noqa=False,
                             report_syntax_errors=False, tree=self.tree, **request.engine_options)
        for d in result.diagnostics:
            yield d.line, d.col - 1, f"{d.code} {d.message}", type(self)
        for error in result.errors:
            if error.internal and INTERNAL_ERROR in resolved.codes:
                yield 1, 0, f"{INTERNAL_ERROR} {error.message}; please report it", type(self)
