"""The flake8 entry point: ``flake8 --select=TL`` runs torchlint's default rules.

Opt-in rules are put on flake8's default ignore list, as flake8-bugbear does
with its B9 codes: ``--extend-select=TL106`` (or ``--select`` naming the code)
turns one on, and a plain ``--select=TL`` does not.

flake8 handles ``# noqa``, ``--per-file-ignores`` and syntax errors (E999)
itself, so the plugin only reports findings. A rule that raises becomes a
TL002 finding instead of aborting flake8's run.
"""
from __future__ import annotations

from torchlint import __version__
from torchlint.engine import INTERNAL_ERROR, lint_source
from torchlint.rules import ALL_RULES

_OPT_IN_CODES = [rule.code for rule in ALL_RULES if not rule.default]


class TorchlintChecker:
    name = "torchlint"
    version = __version__

    @staticmethod
    def add_options(parser) -> None:
        parser.extend_default_ignore(_OPT_IN_CODES)

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
        result = lint_source(source, self.filename, ALL_RULES, apply_noqa=False,
                             report_syntax_errors=False, tree=self.tree)
        for d in result.diagnostics:
            yield d.line, d.col - 1, f"{d.code} {d.message}", type(self)
        for error in result.errors:
            if error.internal:
                yield 1, 0, f"{INTERNAL_ERROR} {error.message}; please report it", type(self)
