"""Torch versions as the rules compare them: ``(major, minor)`` tuples.

The target version is the oldest torch a project supports: advice that depends
on torch's behaviour (a default that changed, a function that was removed)
follows it. Where nothing says otherwise, rules assume the newest version they
know.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

TorchVersion = Tuple[int, int]

NEWEST_KNOWN: TorchVersion = (2, 13)

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$")


def parse_version(text: str) -> Optional[TorchVersion]:
    """``"2.1"`` or ``"2.1.3"`` as ``(2, 1)``; None when the text is not such a version."""
    match = _VERSION.match(text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def format_version(version: TorchVersion) -> str:
    return f"{version[0]}.{version[1]}"
