"""``torchlint check`` / ``torchlint rule`` / ``torchlint clean`` / ``torchlint --version``.

Exit codes: 0 clean, 1 findings, 2 usage, configuration or internal error.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import List, Optional

from torchlint import __version__
from torchlint.safe_io import interrupts_unhidden

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_BROKEN_PIPE = 128 + 13  # SIGPIPE's number: what a shell shows for `cat big | head -1`
# A run stopped by a signal exits 128 + its number, as shells report it: 130 for Ctrl-C.
_STOPPING = (signal.SIGTERM, signal.SIGHUP) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a closed terminal), taken the way Ctrl-C is: the worker pool is
    shut down, files stay old or new."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_stop_signal(signum, frame) -> None:
    raise Terminated(signum)


def _interrupted(exc: KeyboardInterrupt) -> int:
    try:
        sys.stderr.write("torchlint: interrupted\n")
    except OSError:  # SIGHUP: the terminal may be gone
        pass
    return 128 + (exc.signum if isinstance(exc, Terminated) else signal.SIGINT)


def _split(values: Optional[List[str]], option: str) -> List[str]:
    """``["TL1,TL301", "TL5"]`` -> the selectors; a value naming none (``--select ""``) is an error,
    not a silent fall back to the defaults."""
    out = []
    for value in values or ():
        codes = [code.strip() for code in value.split(",") if code.strip()]
        if not codes:
            from torchlint.config import ConfigError

            raise ConfigError(f"{option} {value!r}: no rule selector given (e.g. TL301, TL3 or ALL)")
        out.extend(codes)
    return out


def build_parser() -> argparse.ArgumentParser:
    from torchlint.reporters import FORMATS  # light: each format imports its needs when used

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
    check.add_argument("--output-format", choices=tuple(FORMATS), default="text",
                       help="text (default), concise, full, json, sarif, github or gitlab; see docs/ci.md")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="with PATH '-': read the source from stdin and report it as PATH "
                            "(config exclude and per-file-ignores apply to that name)")
    check.add_argument("--config", type=Path, metavar="FILE",
                       help="config file for every file: pyproject.toml ([tool.torchlint]) or torchlint.toml "
                            "(default: the nearest to each file; see docs/configuration.md)")
    check.add_argument("--target-torch-version", metavar="X.Y",
                       help="the oldest torch the code must run on, e.g. 2.1 (default: the config's "
                            "target-torch-version, else the lower bound of torch in the project's "
                            "dependencies, else the newest torchlint knows)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument("--jobs", "-j", type=_jobs, default=0, metavar="N",
                       help="worker processes (default: the CPUs this process may use, after taskset and "
                            "cgroup quotas; 1 = no pool; at most that many)")
    check.add_argument("--no-cache", action="store_true",
                       help="ignore and do not write the .torchlint_cache of unchanged files")
    check.add_argument("--cache-dir", type=Path, metavar="DIR",
                       help="keep the cache in DIR (default: $TORCHLINT_CACHE_DIR, else .torchlint_cache "
                            "in the config's folder or the current directory)")
    check.add_argument("--fix", action="store_true",
                       help="apply safe fixes and report what remains (exit 0 when nothing does)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff, also apply fixes that may change behaviour")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes as a unified diff instead of writing them; "
                            "exit 1 when there is something to fix")

    _add_check_options(check)

    rule = sub.add_parser("rule", help="explain a rule: torchlint rule TL301")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="explain every rule")

    sub.add_parser("server", help="run the language server on stdio (needs torchlint[lsp])")

    clean = sub.add_parser("clean", help="remove the result cache (the default one and "
                                         "$TORCHLINT_CACHE_DIR's or --cache-dir's)")
    clean.add_argument("--cache-dir", type=Path, metavar="DIR", help="also remove the cache in DIR")
    clean.add_argument("--config", type=Path, metavar="FILE",
                       help="the config whose folder holds the default cache (as for check)")
    return parser


def _jobs(value: str) -> int:
    """``--jobs``: a whole number, 0 (every CPU this process may use) or more."""
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of worker processes, got {value!r}") from None
    if jobs < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (every usable CPU) or more, got {jobs}")
    return jobs


def _add_check_options(check) -> None:
    """The options ruff and flake8 users reach for, with ruff's names and meanings (docs/cli.md)."""
    out = check.add_argument_group("output")
    out.add_argument("--statistics", action="store_true", help="a count per rule code instead of the findings")
    out.add_argument("--count", action="store_true", help="print the number of findings only")
    out.add_argument("-q", "--quiet", action="store_true", help="the findings only, no summary")
    out.add_argument("-v", "--verbose", action="store_true",
                     help="also list the files checked and the time taken, on stderr")
    out.add_argument("-o", "--output-file", type=Path, metavar="FILE", help="write the report to FILE")
    out.add_argument("--show-fixes", action="store_true", help="with --fix, list what was fixed in each file")
    out.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                     help="colour the path and code (auto: on a terminal, honouring NO_COLOR and FORCE_COLOR)")
    out.add_argument("--show-files", action="store_true", help="list the files that would be checked and exit")
    out.add_argument("--show-settings", metavar="PATH", help="print the settings resolved for PATH and exit")
    fixing = check.add_argument_group("fixing")
    fixing.add_argument("--fix-only", action="store_true",
                        help="apply fixes and report only what was fixed; exit 0 unless an error")
    fixing.add_argument("--add-noqa", action="store_true",
                        help="add '# noqa: TLxxx' to every finding's line (notebooks are skipped)")
    files = check.add_argument_group("file selection")
    files.add_argument("--exclude", action="append", metavar="PATTERNS",
                       help="comma-separated patterns to skip, instead of the configs' exclude")
    files.add_argument("--extend-exclude", action="append", metavar="PATTERNS",
                       help="patterns to skip in addition to the configs' exclude")
    files.add_argument("--force-exclude", action="store_true",
                       help="apply the excludes to files named on the command line too (pre-commit)")
    files.add_argument("--extend-ignore", action="append", metavar="CODES", help="rules to leave out, like --ignore")
    files.add_argument("--per-file-ignores", action="append", metavar="PATTERN:CODES", default=[],
                       help="rules to leave out in matching files, e.g. 'tests/*:TL301'; repeatable")
    files.add_argument("--isolated", action="store_true", help="read no config file at all")
    files.add_argument("--no-respect-gitignore", dest="respect_gitignore", action="store_false", default=None,
                       help="walk into what .gitignore files ignore")


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "check":
        for signum in _STOPPING:
            signal.signal(signum, _on_stop_signal)
    try:
        with interrupts_unhidden():  # Ctrl-C inside libcst's codegen can come out as a KeyError
            code = _command(args, parser)
        sys.stdout.flush()  # here, not at exit: a reader gone is known before the code is returned
        return code
    except BrokenPipeError:  # `torchlint check | head -1`
        return _reader_gone()
    except KeyboardInterrupt as exc:  # Ctrl-C anywhere (checking, fixing): no traceback; files are old or new
        return _interrupted(exc)


def _command(args, parser) -> int:
    if args.command == "check":
        return _check(args)
    if args.command == "rule":
        return _rule(args, parser)
    if args.command == "server":
        return _server()
    if args.command == "clean":
        return _clean(args)
    parser.print_help()
    return EXIT_ERROR


def _reader_gone() -> int:
    """The reader of stdout stopped first: exit as a process killed by SIGPIPE does (141 in a
    shell), never 0, so that ``set -o pipefail`` cannot take an unread report for a clean run.
    stdout goes to /dev/null: the flush at exit must not fail again."""
    import os

    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def _error(message: str) -> int:
    sys.stderr.write(f"torchlint: error: {message}\n")
    return EXIT_ERROR


def _server() -> int:
    try:
        import pygls  # noqa: F401
    except ImportError:
        return _error("the language server needs pygls: pip install 'torchlint[lsp]'")
    from torchlint.server import serve

    serve()
    return EXIT_CLEAN


def _clean(args) -> int:
    """Remove every cache a ``check`` from here could use, and say what went."""
    import os

    from torchlint import config as config_mod
    from torchlint.runner import CACHE_DIR, CACHE_DIR_ENV, remove_cache

    try:
        default = config_mod.Settings(config_file=args.config).cache_root() / CACHE_DIR
    except config_mod.ConfigError as exc:
        return _error(str(exc))
    folders = [default]
    for named in (args.cache_dir, os.environ.get(CACHE_DIR_ENV) or None):
        if named is not None and Path(os.path.abspath(named)) not in map(Path, map(os.path.abspath, folders)):
            folders.append(Path(named))
    for folder in folders:
        removed, gone = remove_cache(folder)
        if gone:
            sys.stdout.write(f"Removed the cache {folder}\n")
        elif removed:
            sys.stdout.write(f"Removed {len(removed)} cache file{'s' if len(removed) != 1 else ''} from "
                             f"{folder}; the folder holds other files and was kept\n")
        elif folder.exists():
            sys.stdout.write(f"No torchlint cache in {folder}; left as it is\n")
        else:
            sys.stdout.write(f"No cache at {folder}\n")
    return EXIT_CLEAN


def _rule(args, parser) -> int:
    from torchlint.docs import render
    from torchlint.engine import STATUS_CODES
    from torchlint.rules import ALL_RULES, RULES_BY_CODE

    if args.all:
        sys.stdout.write("\n".join(render(rule) for rule in ALL_RULES))
        return EXIT_CLEAN
    if not args.code:
        return _error("name a rule (torchlint rule TL301) or use --all")
    code = args.code.upper()
    if code in STATUS_CODES:
        name, line, more = STATUS_CODES[code]
        sys.stdout.write(f"# {code}: {name}\n\nNot a rule: {line}.\n\n{more}\n")
        return EXIT_CLEAN
    rule = RULES_BY_CODE.get(code)
    if rule is None:
        known = ", ".join([*STATUS_CODES, *RULES_BY_CODE])
        return _error(f"unknown rule code '{args.code}' (known: {known})")
    sys.stdout.write(render(rule))
    return EXIT_CLEAN


def _as_text(data: bytes) -> str:
    """stdin's text for reporters that quote source lines (never fails)."""
    from torchlint.source import decode

    try:
        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return data.decode("utf-8", "replace")


def _stdin_name(args) -> Optional[str]:
    """The name stdin is reported under, None when not reading stdin, "" for a misuse."""
    if "-" not in args.paths and not (args.stdin_filename and args.paths == ["."]):
        return None
    if args.paths not in (["-"], ["."]):
        return ""
    return args.stdin_filename or "stdin"


def _settings(args):
    """The run's ``config.Settings``: config files nearest each file (or ``--config``)
    under the command line's select / extend-select / ignore."""
    from torchlint import config as config_mod

    ignore = _split(args.ignore, "--ignore") + _split(args.extend_ignore, "--extend-ignore")
    overrides = config_mod.command_line(_split(args.select, "--select"), _split(args.extend_select, "--extend-select"),
                                        ignore)
    target = None
    if args.target_torch_version is not None:
        target = config_mod.target_version(args.target_torch_version, "--target-torch-version")
    return config_mod.Settings(overrides, config_file=args.config, isolated=args.isolated, files=_file_options(args),
                               target_torch=target)


def _file_options(args):
    """The command line's exclude / per-file-ignores / gitignore layer; None when it names none."""
    from torchlint import config as config_mod

    options = config_mod.FileOptions(
        exclude=tuple(_patterns(args.exclude)) if args.exclude is not None else None,
        extend_exclude=tuple(_patterns(args.extend_exclude)),
        per_file_ignores=tuple(config_mod.per_file_ignore(value) for value in args.per_file_ignores),
        respect_gitignore=args.respect_gitignore,
    )
    return None if options == config_mod.FileOptions(root=options.root) else options


def _patterns(values: Optional[List[str]]) -> List[str]:
    return [p.strip() for value in values or () for p in value.split(",") if p.strip()]


def _misuse(args) -> Optional[str]:
    """Options that contradict each other, as one message; None when they agree."""
    if args.diff and args.output_format != "text":
        return f"--diff prints a unified diff; it cannot be combined with --output-format {args.output_format}"
    if args.isolated and args.config is not None:
        return "--isolated reads no config file; it cannot be combined with --config"
    modes = [name for name, on in (("--fix-only", args.fix_only), ("--add-noqa", args.add_noqa),
                                   ("--diff", args.diff)) if on]
    if len(modes) > 1:
        return f"{' and '.join(modes)} cannot be combined"
    if args.add_noqa and args.fix:
        return "--add-noqa cannot be combined with --fix"
    if args.statistics and args.count:
        return "--statistics and --count cannot be combined"
    return None


def _check(args) -> int:
    from torchlint.config import ConfigError
    from torchlint.discover import discover

    stdin_name = _stdin_name(args)
    if stdin_name == "":
        return _error("'-' (read stdin) cannot be combined with other paths")
    if stdin_name is not None and args.add_noqa:
        return _error("--add-noqa edits files; it cannot be used on stdin")
    misuse = _misuse(args)
    if misuse is not None:
        return _error(misuse)
    try:
        settings = _settings(args)
        if args.show_settings is not None:
            from torchlint.reporters.settings import show_settings

            show_settings(args.show_settings, settings, sys.stdout)
            return EXIT_CLEAN
        missing: List[str] = []
        if stdin_name is not None:  # an editor's buffer: excluded names report nothing
            files = [] if settings.is_excluded(stdin_name) else [stdin_name]
        else:
            files, missing = discover(args.paths, settings, force_exclude=args.force_exclude)
        # Every config that applies is read and checked before linting; each file's request is
        # resolved here, once, for the check and the fix alike.
        requests = {path: settings.resolve(path).request for path in files}
    except ConfigError as exc:
        return _error(str(exc))
    if args.show_files:
        sys.stdout.write("".join(f"{path}\n" for path in files))
        return EXIT_CLEAN
    for path in missing:
        _error(f"{path}: no such file or directory")
    return _report_to_file(args, settings, requests, stdin_name, files, missing)


def _report_to_file(args, settings, requests, stdin_name, files, missing) -> int:
    """``-o FILE``: the report goes there instead of stdout."""
    if args.output_file is None:
        return _lint(args, settings, requests, stdin_name, files, missing, sys.stdout)
    try:
        out = open(args.output_file, "w", encoding="utf-8")
    except OSError as exc:
        return _error(f"{args.output_file}: cannot write: {exc.strerror or exc}")
    with out:
        return _lint(args, settings, requests, stdin_name, files, missing, out)


def _check_all(args, settings, requests, stdin_name, files):
    """(results, stdin's bytes or None, sources for reporters)."""
    import time

    from torchlint.runner import cache_folder, check_files

    started = time.perf_counter()
    cache_dir = None if args.no_cache else cache_folder(args.cache_dir, settings.cache_root())
    if stdin_name is not None:
        from torchlint.runner import lint_data

        data = sys.stdin.buffer.read()
        results = [lint_data(stdin_name, data, requests[stdin_name]) for _ in files]
        return results, data, {stdin_name: _as_text(data)}
    results = check_files(files, requests.__getitem__, jobs=args.jobs, cache_dir=cache_dir)
    if args.verbose:
        for path in files:
            sys.stderr.write(f"torchlint: checked {path}\n")
        sys.stderr.write(f"torchlint: checked {len(files)} file{'s' if len(files) != 1 else ''} "
                         f"in {time.perf_counter() - started:.2f}s\n")
    return results, None, {}


def _lint(args, settings, requests, stdin_name, files, missing, out) -> int:
    from torchlint.codes import INTERNAL_ERROR
    from torchlint.runner import WorkerLost

    try:
        results, data, sources = _check_all(args, settings, requests, stdin_name, files)
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except WorkerLost as exc:
        return _error(str(exc))
    fix_run = None
    if args.fix or args.diff or args.fix_only:
        if stdin_name is not None:
            request = requests[stdin_name] if files else settings.resolve(stdin_name).request  # excluded: unchecked
            return _fix_stdin(args, stdin_name, data, request, bool(files))
        from torchlint.fix_files import fix_files

        before = sum(len(result.diagnostics) for result in results)
        fix_run = fix_files(files, results, requests.__getitem__, unsafe=args.unsafe_fixes, write=not args.diff)
        for line in fix_run.errors:
            sys.stderr.write(f"torchlint: {line}\n")
        results = fix_run.results
    diagnostics, internal = [], False
    for result in results:
        diagnostics.extend(result.diagnostics)
        for err in result.errors:
            internal |= err.internal
            kind = f"{INTERNAL_ERROR} " if err.internal else ""
            sys.stderr.write(f"torchlint: {kind}{err.path}: {err.message}\n")
    failed = bool(missing or internal)
    if fix_run is not None and args.diff:
        return _report_diff(fix_run, diagnostics, args, failed=failed)
    if args.fix_only:
        return _report_fix_only(fix_run, _hidden_fixes(diagnostics, args), args, out, failed=failed)
    if args.add_noqa:
        return _report_add_noqa(diagnostics, out, failed=failed)
    unchecked = len(missing) + sum(1 for result in results if any(not e.internal for e in result.errors))
    context = {"unchecked": unchecked}
    if fix_run is not None:
        context.update(fixed=max(0, before - len(diagnostics)), hidden_fixes=_hidden_fixes(diagnostics, args))
    _report(args, diagnostics, out, sources, context, fix_run)
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if diagnostics and not args.exit_zero else EXIT_CLEAN


def _report(args, diagnostics, out, sources, context, fix_run) -> None:
    """The findings in the format asked for, or --statistics / --count in their place."""
    from torchlint.reporters import FORMATS
    from torchlint.reporters import statistics as summaries
    from torchlint.reporters._common import wants_color

    if args.statistics:
        summaries.statistics(diagnostics, out, _fixable(args), args.output_format)
    elif args.count:
        summaries.count(diagnostics, out)
    else:
        context.update(quiet=args.quiet, color=wants_color(args.color, out))
        FORMATS[args.output_format](diagnostics, out, sources=sources, **context)
    if fix_run is not None and args.show_fixes:
        summaries.show_fixes(fix_run.fixes, out)


def _fixable(args) -> frozenset:
    from torchlint.diagnostic import allowed_fixes  # not the fixer's module: that imports libcst

    return frozenset(allowed_fixes(args.unsafe_fixes))


def _report_fix_only(fix_run, hidden: int, args, out, failed: bool) -> int:
    """What was fixed, and how many unsafe fixes were held back (as ruff says it)."""
    from torchlint.reporters import hidden_fixes_line
    from torchlint.reporters import statistics as summaries

    if args.show_fixes:
        summaries.show_fixes(fix_run.fixes, out)
    elif not args.quiet:
        summaries.fix_only_summary(fix_run.fixes, out)
    if not args.quiet:
        out.write(hidden_fixes_line(hidden))
    return EXIT_ERROR if failed or any(fix.error for fix in fix_run.fixes) else EXIT_CLEAN


def _report_add_noqa(diagnostics, out, failed: bool) -> int:
    from torchlint.add_noqa import add_noqa

    run = add_noqa(diagnostics)
    for note in run.notes:
        sys.stderr.write(f"torchlint: {note}\n")
    noun = "comment" if run.added == 1 else "comments"
    out.write(f"Added {run.added} noqa {noun} in {run.files} file{'s' if run.files != 1 else ''}.\n")
    return EXIT_ERROR if failed else EXIT_CLEAN


def _hidden_fixes(diagnostics, args) -> int:
    """Unsafe fixes --unsafe-fixes would apply."""
    from torchlint.diagnostic import Applicability

    if args.unsafe_fixes:
        return 0
    return sum(1 for d in diagnostics if d.fix is Applicability.UNSAFE)


def _report_diff(fix_run, diagnostics, args, failed: bool) -> int:
    """``--diff``: the changes on stdout, a count on stderr; exit 1 when there is something to fix."""
    from torchlint.fix_files import decode_file, unified_diff
    from torchlint.reporters import hidden_fixes_line

    count = 0
    for fixed in fix_run.changed:
        old, encoding = decode_file(fixed.old)
        sys.stdout.write(unified_diff(fixed.path, old, fixed.new.decode(encoding)))
        count += len(fixed.outcome.applied)
    noun = "fix" if count == 1 else "fixes"
    sys.stderr.write(f"Would apply {count} {noun} in {len(fix_run.changed)} file"
                     f"{'s' if len(fix_run.changed) != 1 else ''}.\n" if count else "No fixes to apply.\n")
    sys.stderr.write(hidden_fixes_line(_hidden_fixes(diagnostics, args)))
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if fix_run.changed else EXIT_CLEAN


def _fix_stdin(args, name: str, data: bytes, request, checked: bool) -> int:
    """``--fix`` on stdin writes the fixed source to stdout (``--diff``: the diff) and the
    findings that remain to stderr, as editors expect."""
    from torchlint.fix_files import decode_file, fix_data, unified_diff
    from torchlint.fixer import allowed_fixes
    from torchlint.runner import lint_data

    new, remaining_result = None, None
    if checked and not name.endswith(".ipynb"):
        fixed = fix_data(name, data, request, allowed_fixes(args.unsafe_fixes))
        for code, line, reason in fixed.outcome.rejected:
            sys.stderr.write(f"torchlint: {name}:{line}: {code} fix not applied: {reason}\n")
        if fixed.error is not None:
            sys.stderr.write(f"torchlint: {name}: {fixed.error}\n")
        new = fixed.new if fixed.error is None else None
        remaining_result = fixed.outcome.remaining if new is not None else None
    if args.diff:
        if new is not None:
            old, encoding = decode_file(data)
            sys.stdout.write(unified_diff(name, old, new.decode(encoding)))
        return EXIT_FINDINGS if new is not None else EXIT_CLEAN
    final = new if new is not None else data
    sys.stdout.buffer.write(final)
    sys.stdout.flush()
    if not checked:
        remaining = []
    else:  # the fix loop linted the fixed text last; an unfixed one is linted as the check did
        remaining = (remaining_result or lint_data(name, final, request)).diagnostics
    if args.output_format == "text":  # one line per finding, as editors read them
        for d in remaining:
            sys.stderr.write(d.as_text() + "\n")
    else:  # stdout holds the source: the report goes to stderr, in the format asked for
        from torchlint.reporters import FORMATS

        FORMATS[args.output_format](remaining, sys.stderr, sources={name: _as_text(final)})
    return EXIT_FINDINGS if remaining and not args.exit_zero else EXIT_CLEAN
