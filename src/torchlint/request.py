"""What one file is linted for, resolved once: its codes and target torch version, and what follows from them.

Every front end (the CLI, the fix loop, the language server, the flake8 plugin) gets one
``LintRequest`` per file from ``config.Settings.resolve(path).request`` and hands it on;
the rules a request runs and whether it judges noqa comments (TL010) are derived here,
once, not by each caller from the codes.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional, Tuple, Type

from torchlint.codes import NOQA_CHECKS, UNUSED_NOQA
from torchlint.torch_version import TorchVersion

if TYPE_CHECKING:
    from torchlint.rule import Rule


@dataclass(frozen=True)
class LintRequest:
    codes: frozenset  # what the file is linted for: rule codes and engine checks (TL001, TL010)
    target_torch: Optional[TorchVersion] = None  # None: the newest torch known
    # Rule classes given as they are (a test's own rule, a plugin's), in place of those of ``codes``.
    given_rules: Optional[Tuple[Type["Rule"], ...]] = None

    @classmethod
    def of(cls, codes: Iterable[str], target_torch: Optional[TorchVersion] = None) -> "LintRequest":
        return cls(frozenset(codes), target_torch)

    @classmethod
    def for_rules(cls, rules: Iterable[Type["Rule"]], target_torch: Optional[TorchVersion] = None,
                  extra_codes: Iterable[str] = ()) -> "LintRequest":
        """A request for these rule classes (and engine checks among ``extra_codes``, such as TL010)."""
        rules = tuple(rules)
        return cls(frozenset(rule.code for rule in rules) | frozenset(extra_codes), target_torch, rules)

    @property
    def rules(self) -> Tuple[Type["Rule"], ...]:
        """The rule classes of ``codes``, ordered by code (imports the rules: not on the light path)."""
        return self.given_rules if self.given_rules is not None else rules_for(self.codes)

    @property
    def unused_noqa(self) -> bool:
        """TL010 is on: noqa comments are judged, and its fix applies."""
        return UNUSED_NOQA in self.codes

    @property
    def engine_options(self) -> dict:
        """``lint_source``'s, ``lint_notebook``'s and ``lint_module``'s options for it (they take the
        rules and these explicitly): the checks of noqa comments (TL010, TL011), the target torch."""
        checks = self.codes & NOQA_CHECKS
        options: dict = {"noqa_checks": checks} if checks else {}
        if self.target_torch is not None:
            options["target_torch"] = self.target_torch
        return options

    def with_codes(self, codes: Iterable[str]) -> "LintRequest":
        """The same request for other codes (given rule classes keep those of the new codes)."""
        codes = frozenset(codes)
        given = None if self.given_rules is None else tuple(r for r in self.given_rules if r.code in codes)
        return LintRequest(codes, self.target_torch, given)


@functools.lru_cache(maxsize=64)
def rules_for(codes: frozenset) -> Tuple[Type["Rule"], ...]:
    """The one place codes become rules: the rules of ``codes``, by code; codes no rule has are skipped."""
    from torchlint.rules import ALL_RULES

    return tuple(rule for rule in ALL_RULES if rule.code in codes)
