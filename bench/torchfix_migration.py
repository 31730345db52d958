#!/usr/bin/env python3
"""The move from TorchFix (docs/torchfix.md, "Moving from TorchFix"), run on a checkout and measured.

    python bench/torchfix_migration.py CHECKOUT [--extend-select TL7,TL601,TL602] [--json OUT]

In a temporary copy of CHECKOUT (the checkout itself is never written), the steps the page
gives a user:

1. the config: ``[tool.torchlint] extend-select = [...]`` appended to ``pyproject.toml`` (left
   as it is when the file already has a ``[tool.torchlint]`` table);
2. ``torchlint check --select TL011 --fix .``, the rewrite of TorchFix's ``# noqa`` codes;
3. the same command again, which must change nothing;
4. ``torchlint check --extend-select TL010`` on the rewritten files: a migrated code that
   suppresses no finding on its line is reported there.

It prints a table: the Python files, the TorchFix codes in ``# noqa:`` lists per code (rewritten,
or left because no torchlint rule answers it), ``# flake8: noqa: TORnnn`` comments (flake8 reads
those as a whole-file ``# flake8: noqa``, never as a line's list: TL011 leaves them), lines
changed other than by the rewrite (must be 0), whether the second run changed anything, and
how many migrated codes suppress a finding.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torchlint
from torchlint.noqa import noqa_lists, with_codes_replaced
from torchlint.torchfix_codes import ANSWERS

TORCHFIX_CODE = re.compile(r"^TOR\d{3}$")
# flake8 matches "# flake8: noqa" at the start of a line and then skips the whole file, codes or not.
FILE_LEVEL = re.compile(r"^\s*#\s*flake8[:=]\s*noqa\b.*?\b(TOR\d{3}(?:[,\s]+TOR\d{3})*)", re.IGNORECASE)
DEFAULT_SELECT = "TL7,TL601,TL602"  # the page's config with TorchFix's opt-in TOR4 answers
SKIPPED_DIRS = {".git", ".hg", ".venv", "venv", "__pycache__", "node_modules"}


@dataclass
class Migration:
    files: int = 0  # Python files in the checkout
    files_rewritten: int = 0
    rewritten: Dict[str, int] = field(default_factory=dict)  # TorchFix code -> comments rewritten
    left: Dict[str, int] = field(default_factory=dict)  # TorchFix code no torchlint code answers
    file_level: Dict[str, int] = field(default_factory=dict)  # "# flake8: noqa: TORnnn" comments
    wrong: List[str] = field(default_factory=list)  # "path:line" rewritten otherwise than expected
    other_changes: List[str] = field(default_factory=list)  # "path:line" changed that held no TorchFix code
    idempotent: bool = False
    suppressing: int = 0  # migrated codes that suppress a finding on their line
    unsuppressed: List[str] = field(default_factory=list)  # "path:line CODE" that suppress nothing


def python_files(root: Path) -> List[Path]:
    out = []
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        out.extend(Path(directory, name) for name in sorted(names) if name.endswith(".py"))
    return out


def read(path: Path) -> Optional[str]:
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def torchfix_lines(source: str) -> Dict[int, List[str]]:
    """line -> the TorchFix codes of that line's ``# noqa:`` list (as torchlint reads the list)."""
    return {line: [c for c in codes if TORCHFIX_CODE.match(c)] for line, _, codes in noqa_lists(source)
            if any(TORCHFIX_CODE.match(c) for c in codes)}


def torchlint_env() -> Dict[str, str]:
    """The environment for the CLI runs: the torchlint this script imported, wherever it lives."""
    env = dict(os.environ)
    home = str(Path(torchlint.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [home, env.get("PYTHONPATH", "")]))
    return env


def torchlint_check(root: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "torchlint", "check", "--no-cache", *args], cwd=root,
                          capture_output=True, text=True, env=torchlint_env())
    if done.returncode not in (0, 1):
        raise SystemExit(f"torchlint check {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done


def write_config(root: Path, extend_select: Sequence[str]) -> None:
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    if re.search(r"^\[tool\.torchlint\]", text, re.M):
        return
    codes = ", ".join(f'"{code}"' for code in extend_select)
    separator = "" if not text or text.endswith("\n") else "\n"
    pyproject.write_text(f"{text}{separator}\n[tool.torchlint]\nextend-select = [{codes}]\n", encoding="utf-8")


def snapshot(paths: Sequence[Path]) -> Dict[Path, bytes]:
    return {path: path.read_bytes() for path in paths}


def migrate(checkout: Path, extend_select: Sequence[str] = tuple(DEFAULT_SELECT.split(","))) -> Migration:
    """The page's migration, run in a temporary copy of ``checkout``; the figures."""
    result = Migration()
    with tempfile.TemporaryDirectory(prefix="torchfix-migration-") as scratch:
        root = Path(scratch) / "checkout"
        shutil.copytree(checkout, root, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED_DIRS))
        files = python_files(root)
        result.files = len(files)
        before: Dict[Path, Tuple[str, Dict[int, List[str]]]] = {}
        for path in files:
            source = read(path)
            if source is None:
                continue
            for line in source.splitlines():
                found = FILE_LEVEL.match(line)
                for code in re.findall(r"TOR\d{3}", found.group(1)) if found else ():
                    result.file_level[code] = result.file_level.get(code, 0) + 1
            marked = torchfix_lines(source)
            if marked:
                before[path] = (source, marked)

        write_config(root, extend_select)
        torchlint_check(root, "--select", "TL011", "--fix", ".")
        after_fix = snapshot(files)
        torchlint_check(root, "--select", "TL011", "--fix", ".")
        result.idempotent = snapshot(files) == after_fix

        migrated: Dict[Path, Dict[int, List[str]]] = {}  # path -> line -> TL codes written there
        for path in files:
            relative = path.relative_to(root).as_posix()
            old, marked = before.get(path, (read(path) or "", {}))
            new = after_fix[path].decode("utf-8", errors="replace")
            if new != old:
                result.files_rewritten += 1
            old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
            if len(old_lines) != len(new_lines):
                result.other_changes.append(f"{relative}: {len(old_lines)} lines became {len(new_lines)}")
                continue
            for number, (was, now) in enumerate(zip(old_lines, new_lines), start=1):
                codes = marked.get(number, [])
                replacements = {code: ANSWERS[code] for code in codes if ANSWERS.get(code)}
                for code in codes:
                    if code not in replacements:
                        result.left[code] = result.left.get(code, 0) + 1
                    elif was != now:
                        result.rewritten[code] = result.rewritten.get(code, 0) + 1
                    else:
                        result.wrong.append(f"{relative}:{number} {code} not rewritten")
                if was == now:
                    continue
                if not replacements:
                    result.other_changes.append(f"{relative}:{number}")
                elif (with_codes_replaced(was.rstrip("\r\n"), replacements) != now.rstrip("\r\n")
                      or was[len(was.rstrip("\r\n")):] != now[len(now.rstrip("\r\n")):]):
                    result.wrong.append(f"{relative}:{number}")
                else:
                    migrated.setdefault(path, {})[number] = sorted(
                        {tl_code for answer in replacements.values() for tl_code in answer})

        if migrated:
            done = torchlint_check(root, "--extend-select", "TL010", "--output-format", "json",
                                   *(path.relative_to(root).as_posix() for path in migrated))
            unused = {(Path(d["path"]).as_posix(), d["line"], code)
                      for d in json.loads(done.stdout or "[]") if d["code"] == "TL010"
                      for code in re.findall(r"unused noqa code (TL\d{3})", d["message"])}
            for path, lines in migrated.items():
                relative = path.relative_to(root).as_posix()
                for number, codes in lines.items():
                    for code in codes:
                        if (relative, number, code) in unused:
                            result.unsuppressed.append(f"{relative}:{number} {code}")
                        else:
                            result.suppressing += 1
    return result


def table(result: Migration) -> str:
    def counts(by_code: Dict[str, int]) -> str:
        return ", ".join(f"{code} {n}" for code, n in sorted(by_code.items())) or "none"

    rewritten = ", ".join(f"{code} -> {'/'.join(ANSWERS[code])} {n}"
                          for code, n in sorted(result.rewritten.items())) or "none"
    rows = [
        ("Python files", str(result.files)),
        ("files the fix rewrote", str(result.files_rewritten)),
        ("noqa codes rewritten", f"{sum(result.rewritten.values())} ({rewritten})"),
        ("noqa codes left (no torchlint rule answers them)", f"{sum(result.left.values())} ({counts(result.left)})"),
        ("`# flake8: noqa: TORnnn` comments left (whole-file in flake8)",
         f"{sum(result.file_level.values())} ({counts(result.file_level)})"),
        ("lines rewritten otherwise than expected", str(len(result.wrong))),
        ("other lines changed", str(len(result.other_changes))),
        ("second run changed nothing", "yes" if result.idempotent else "no"),
        ("migrated codes that suppress a finding", str(result.suppressing)),
        ("migrated codes that suppress nothing (TL010)", str(len(result.unsuppressed))),
    ]
    lines = ["| | |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)]
    details = [*(f"- rewritten otherwise: {item}" for item in result.wrong),
               *(f"- other change: {item}" for item in result.other_changes),
               *(f"- suppresses nothing: {item}" for item in result.unsuppressed)]
    return "\n".join(lines + ([""] + details if details else [])) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a checkout of a project that used TorchFix (never written)")
    parser.add_argument("--extend-select", default=DEFAULT_SELECT,
                        help=f"the config's extend-select (default: {DEFAULT_SELECT})")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not args.checkout.is_dir():
        parser.error(f"{args.checkout} is not a directory")
    result = migrate(args.checkout, [c.strip() for c in args.extend_select.split(",") if c.strip()])
    sys.stdout.write(table(result))
    if args.json is not None:
        args.json.write_text(json.dumps(asdict(result), indent=1) + "\n", encoding="utf-8")
    clean = result.idempotent and not result.wrong and not result.other_changes
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
