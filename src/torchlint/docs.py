"""Rule documentation, rendered from the rule modules (the only place it is written).

``python -m torchlint.docs`` rewrites docs/rules/; a test fails when they are stale.
"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from torchlint.rules import ALL_RULES

_FIX = {"none": "no automatic fix", "safe": "safe fix", "unsafe": "unsafe fix (needs --unsafe-fixes)"}


# The first line of a rule's "Fix safety" section: what applies the fix.
_SAFETY_NOTE = {
    "none": (
        "There is no automatic fix: the right change depends on what the code means "
        "to do. *Use instead* shows the usual one."
    ),
    "safe": "This fix is **safe**: `torchlint check --fix` applies it.",
    "unsafe": (
        "This fix is **unsafe**: it may change what the program does, so only "
        "`torchlint check --fix --unsafe-fixes` applies it (`--diff` shows it first)."
    ),
}
_FIX_HEADING = "## Fix safety"


def render(rule) -> str:
    status = "on by default" if rule.default else "opt-in (enable with extend-select)"
    head = (
        f"# {rule.code}: {rule.name}\n\n"
        f"**Status:** {status} · **Fix:** {_FIX[rule.fix_safety]}\n\n"
        f"Message: `{rule.code} {rule.message}`\n"
    )
    return head + fix_safety_section(rule, textwrap.dedent(rule.docs).rstrip()) + "\n"


def fix_safety_section(rule, body: str) -> str:
    """Give every rule a "Fix safety" section that opens with how (or whether) a fix is applied.

    The rule's own section (what the fix does, why it is safe or unsafe)
    follows the note; a rule that wrote none gets the note alone, before
    "Evidence" when there is one.
    """
    note = _SAFETY_NOTE.get(rule.fix_safety)
    if note is None:
        return body
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if line.strip() == _FIX_HEADING:
            return "\n".join(lines[: index + 1] + [note, ""] + lines[index + 1:])
    section = f"{_FIX_HEADING}\n{note}\n"
    marker = "\n## Evidence"
    if marker in body:
        at = body.index(marker) + 1
        return body[:at] + section + "\n" + body[at:]
    return body + "\n\n" + section.rstrip("\n")


def render_index() -> str:
    lines = [
        "# Rules\n",
        "Generated from `src/torchlint/rules/`; run `python -m torchlint.docs` after editing a rule.\n",
        "| code | name | default | what it finds |",
        "|---|---|---|---|",
    ]
    for rule in ALL_RULES:
        summary = rule.message.split(";")[0]
        default = "yes" if rule.default else "opt-in"
        lines.append(f"| [{rule.code}]({rule.code}.md) | {rule.name} | {default} | {summary} |")
    return "\n".join(lines) + "\n"


def pages() -> dict:
    out = {f"{rule.code}.md": render(rule) for rule in ALL_RULES}
    out["index.md"] = render_index()
    return out


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"))
