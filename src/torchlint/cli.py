"""``torchlint check`` / ``torchlint rule`` / ``torchlint --version``.

Exit codes: 0 clean, 1 findings, 2 usage, configuration or internal error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List, Optional

from torchlint import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _split(values: Optional[List[str]]) -> List[str]:
    return [code for value in values or () for code in value.split(",") if code.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchlint", description="Find autograd hazards in PyTorch code without running it."
    )
    parser.add_argument("--version", action="version", version=f"torchlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="lint files and directories (default: .)")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument("--select", action="append", metavar="CODES",
                       help="only these rules or prefixes, comma-separated (replaces the config)")
    check.add_argument("--extend-select", action="append", metavar="CODES",
                       help="add rules to the selection, e.g. opt-in ones")
    check.add_argument("--ignore", action="append", metavar="CODES", help="rules to leave out")
    check.add_argument("--output-format", choices=("text", "json"), default="text")
    check.add_argument("--config", type=Path, metavar="FILE",
                       help="pyproject.toml to read (default: the nearest one)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--jobs", "-j", type=int, default=0, metavar="N",
                       help="worker processes (default: all cores; 1 = no pool)")
    check.add_argument("--no-cache", action="store_true",
                       help="ignore and do not write the .torchlint_cache of unchanged files")

    rule = sub.add_parser("rule", help="explain a rule: torchlint rule TL301")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="explain every rule")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args, parser)
    except BrokenPipeError:  # `torchlint check | head`
        return EXIT_CLEAN
    parser.print_help()
    return EXIT_ERROR


def _error(message: str) -> int:
    sys.stderr.write(f"torchlint: error: {message}\n")
    return EXIT_ERROR


def _rule(args, parser) -> int:
    from torchlint.docs import render
    from torchlint.rules import ALL_RULES, RULES_BY_CODE

    if args.all:
        sys.stdout.write("\n".join(render(rule) for rule in ALL_RULES))
        return EXIT_CLEAN
    if not args.code:
        return _error("name a rule (torchlint rule TL301) or use --all")
    rule = RULES_BY_CODE.get(args.code.upper())
    if rule is None:
        return _error(f"unknown rule code '{args.code}' (known: {', '.join(RULES_BY_CODE)})")
    sys.stdout.write(render(rule))
    return EXIT_CLEAN


def _check(args) -> int:
    from torchlint import config as config_mod
    from torchlint.discover import discover
    from torchlint.engine import INTERNAL_ERROR
    from torchlint.reporters import FORMATS
    from torchlint.runner import check_files

    try:
        config = config_mod.load(explicit=args.config)
        if args.select:
            config.select = _split(args.select)
        config.extend_select += _split(args.extend_select)
        config.ignore += _split(args.ignore)
        config.validate()
        enabled = config.enabled_codes()
    except config_mod.ConfigError as exc:
        return _error(str(exc))

    files, missing = discover(args.paths, config)
    for path in missing:
        _error(f"{path}: no such file or directory")
    if args.jobs < 0:
        return _error("--jobs must be 0 (all cores) or more")
    cache_root = None if args.no_cache else config.root
    diagnostics, internal = [], False
    try:
        results = check_files(files, enabled, jobs=args.jobs, cache_root=cache_root)
    except KeyboardInterrupt:
        sys.stderr.write("torchlint: interrupted\n")
        return 130
    for path, result in zip(files, results):
        ignored = config.ignored_for(path) if config.per_file_ignores else set()
        diagnostics.extend(d for d in result.diagnostics if d.code in enabled and d.code not in ignored)
        for err in result.errors:
            internal |= err.internal
            kind = f"{INTERNAL_ERROR} " if err.internal else ""
            sys.stderr.write(f"torchlint: {kind}{err.path}: {err.message}\n")
    FORMATS[args.output_format](diagnostics, sys.stdout)
    if missing or internal:
        return EXIT_ERROR
    return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN
