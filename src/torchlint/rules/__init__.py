"""The rule catalogue: every ``tlNNN_<what_it_finds>.py`` module here holds one rule.

Adding a rule is adding its module; the catalogue is read from this folder so
that no second list can fall out of step with it. Rules are ordered by code.
"""
from __future__ import annotations

import importlib
import pkgutil
import re

from torchlint.rule import Rule

_RULE_MODULE = re.compile(r"tl\d{3}_\w+$")


def _discover() -> tuple:
    rules = []
    for info in pkgutil.iter_modules(__path__):
        if not _RULE_MODULE.match(info.name):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found = [
            obj for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Rule) and obj.__module__ == module.__name__
        ]
        if len(found) != 1:
            raise ImportError(f"{module.__name__} must define exactly one Rule, found {len(found)}")
        if not info.name.startswith(found[0].code.lower() + "_"):
            raise ImportError(f"{module.__name__} defines {found[0].code}; the module name must start with it")
        rules.append(found[0])
    return tuple(sorted(rules, key=lambda rule: rule.code))


ALL_RULES = _discover()
RULES_BY_CODE = {rule.code: rule for rule in ALL_RULES}
DEFAULT_CODES = frozenset(rule.code for rule in ALL_RULES if rule.default)
