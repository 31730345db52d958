"""The flake8 entry point: ``flake8 --select=TL`` runs torchlint's default rules.

Opt-in rules run only when named: ``--extend-select=TL106`` or ``--select``
with the code (or a prefix longer than ``TL``, such as ``TL10``), as
flake8-bugbear does with its B9 codes. flake8 itself would let a plain
``--select=TL`` enable them, so the plugin decides which rules run.

flake8 handles ``# noqa``, ``--per-file-ignores`` and syntax errors (E999)
itself, so the plugin only reports findings. A rule that raises becomes a
TL002 finding instead of aborting flake8's run.
"""
from __future__ import annotations

from torchlint import __version__
from torchlint.engine import INTERNAL_ERROR, lint_source
from torchlint.rules import ALL_RULES

_DEFAULT_RULES = tuple(rule for rule in ALL_RULES if rule.default)
_OPT_IN_RULES = tuple(rule for rule in ALL_RULES if not rule.default)


def _named(code: str, chosen) -> bool:
    return any(len(prefix) > 2 and code.startswith(prefix.upper()) for prefix in chosen)


class TorchlintChecker:
    name = "torchlint"
    version = __version__

    rules = _DEFAULT_RULES

    @staticmethod
    def add_options(parser) -> None:
        parser.extend_default_ignore([rule.code for rule in _OPT_IN_RULES])

    @classmethod
    def parse_options(cls, options) -> None:
        chosen = [*(options.select or ()), *(getattr(options, "extend_select", None) or ())]
        cls.rules = _DEFAULT_RULES + tuple(rule for rule in _OPT_IN_RULES if _named(rule.code, chosen))

    def __init__(self, tree, lines, filename) -> None:
        # ``tree`` makes flake8 treat us as an AST plugin (one call per file,
        # none for files it could not parse); the engine reads ``lines`` and
        # uses the tree, at no cost, for its second gate.
        self.tree = tree
        self.lines = lines
        self.filename = filename

    def run(self):
        source = "".join(self.lines)
        if source.startswith("\ufeff"):
            source = source[1:]
        result = lint_source(source, self.filename, self.rules, apply_noqa=False,
                             report_syntax_errors=False, tree=self.tree)
        for d in result.diagnostics:
            yield d.line, d.col - 1, f"{d.code} {d.message}", type(self)
        for error in result.errors:
            if error.internal:
                yield 1, 0, f"{INTERNAL_ERROR} {error.message}; please report it", type(self)
