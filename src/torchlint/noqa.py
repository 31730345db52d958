"""``# noqa`` and ``# noqa: TL301,TL302`` comments, read exactly as flake8 reads them.

flake8 applies its own noqa to the plugin's findings, so the CLI and the
language server must agree with it to the letter: flake8's own pattern, the
first ``# noqa`` on the line only (``# noqa: E501  # noqa: TL301`` silences
E501 alone), and codes compared as written (``# NOQA: tl301`` silences
nothing; ``noqa`` itself may be in any case).
"""
from __future__ import annotations

import re
from typing import Optional, Pattern

_SEPARATORS = re.compile(r"[,\s]+")
_pattern: Optional[Pattern] = None


def noqa_pattern() -> Pattern:
    """flake8's inline-noqa regular expression (imported on first use: most lines have none)."""
    global _pattern
    if _pattern is None:
        from flake8.defaults import NOQA_INLINE_REGEXP

        _pattern = NOQA_INLINE_REGEXP
    return _pattern


def suppressed(line: str, code: str) -> bool:
    if "noqa" not in line.lower():
        return False
    match = noqa_pattern().search(line)
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    listed = tuple(c for c in _SEPARATORS.split(codes) if c)
    return code.startswith(listed)
