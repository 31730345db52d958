"""``# noqa`` and ``# noqa: TL301,TL302`` comments, read the way flake8 reads them."""
from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


def suppressed(line: str, code: str) -> bool:
    if "noqa" not in line.lower():
        return False
    for match in _NOQA.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if any(code.upper().startswith(c.upper()) for c in _CODE.findall(codes)):
            return True
    return False
