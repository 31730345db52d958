"""Summaries instead of findings: ``--statistics``, ``--count``, ``--show-fixes``, ``--fix-only``."""
from __future__ import annotations

import json
from collections import Counter
from typing import Iterable, List, Tuple

from torchlint.reporters._common import rule_name


def statistics(diagnostics, out, fixable=frozenset(), output_format: str = "text") -> None:
    """One row per code, most frequent first, as ruff prints them::

        3  TL301  [*] graph-kept-across-iterations
        1  TL101  [ ] eval-without-no-grad

    ``fixable``: the fix safeties ``--fix`` would apply now; the ``[*]`` column
    appears only when some code has a fix. json gives the same rows as records.
    """
    rows = _rows(diagnostics, fixable)
    if output_format == "json":
        records = [{"code": code, "name": name, "count": count, "fixable": fix} for count, code, name, fix in rows]
        json.dump(records, out, indent=2)
        out.write("\n")
        return
    if not rows:
        return
    count_width = max(len(str(count)) for count, *_ in rows)
    code_width = max(len(code) for _, code, *_ in rows)
    any_fix = any(fix for *_, fix in rows)
    for count, code, name, fix in rows:
        mark = ("[*] " if fix else "[ ] ") if any_fix else ""
        out.write(f"{count:>{count_width}}  {code:<{code_width}}  {mark}{name}\n")
    if any_fix:
        out.write("[*] fixable with the --fix option.\n")


def _rows(diagnostics, fixable) -> List[Tuple[int, str, str, bool]]:
    counts = Counter(d.code for d in diagnostics)
    fixes = {d.code for d in diagnostics if d.fix in fixable}
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [(count, code, rule_name(code) or _status_name(code), code in fixes) for code, count in ordered]


def _status_name(code: str) -> str:
    from torchlint.reporters._common import PSEUDO_RULES

    return PSEUDO_RULES.get(code, (code, ""))[0]


def count(diagnostics, out) -> None:
    """``--count``: the number of findings and nothing else."""
    out.write(f"{len(diagnostics)}\n")


def show_fixes(fixes: Iterable, out) -> None:
    """``--show-fixes``: per fixed file, how many of each code were fixed (ruff's layout)."""
    fixed = [fix for fix in fixes if fix.new is not None and fix.error is None and fix.outcome.applied]
    total = sum(len(fix.outcome.applied) for fix in fixed)
    if not total:
        out.write("No findings fixed.\n")
        return
    out.write(f"Fixed {total} finding{'s' if total != 1 else ''}:\n")
    for fix in fixed:
        out.write(f"- {fix.path}:\n")
        for code, times in sorted(Counter(code for code, _ in fix.outcome.applied).items()):
            name = rule_name(code)
            out.write(f"    {times} × {code}" + (f" ({name})" if name else "") + "\n")


def fix_only_summary(fixes: Iterable, out) -> None:
    """``--fix-only``'s one line: what was fixed, never what remains."""
    fixed = [fix for fix in fixes if fix.new is not None and fix.error is None]
    total = sum(len(fix.outcome.applied) for fix in fixed)
    if not total:
        out.write("No findings fixed.\n")
        return
    files = len(fixed)
    out.write(f"Fixed {total} finding{'s' if total != 1 else ''} in {files} file{'s' if files != 1 else ''}.\n")
