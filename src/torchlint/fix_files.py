"""Fixing files: ``torchlint check --fix``, ``--unsafe-fixes`` and ``--diff``.

The front end's side of fixing: read a file's bytes, decode them the way
Python does, run the fix loop (``fixer.fix_text``) on the text or on a
notebook's code cells, encode the result back the same way (a UTF-8 BOM, a
``# -*- coding`` declaration and CRLF line endings survive), and write it
atomically (a temporary file in the same folder, the original's permission
bits, fsync, ``os.replace``) only when it changed. Diffs for ``--diff``.
"""
from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

from torchlint.fixer import FixOutcome, allowed_fixes, fix_text


def decode_file(data: bytes) -> Tuple[str, str]:
    """(text, encoding) the way Python reads a source file; the encoding re-creates a BOM."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):  # a BOM the codec kept (utf-8 with a BOM is utf-8-sig)
        text = text[1:]
        encoding = "utf-8-sig"
    return text, encoding


def write_atomic(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step, keeping the file's permission bits.

    A read-only file is refused (``PermissionError``), as an editor would.
    """
    import tempfile

    st = os.stat(path)
    if not os.access(path, os.W_OK) or not st.st_mode & 0o222:  # read-only, even for root
        raise PermissionError(13, "Permission denied (the file is read-only)", path)
    target = os.path.realpath(path)  # write through a symlink, never over it
    folder = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".torchlint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unified_diff(path: str, old: str, new: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile=f"a/{path}", tofile=f"b/{path}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


@dataclass
class FileFix:
    path: str
    old: Optional[bytes] = None
    new: Optional[bytes] = None  # None: nothing to change
    outcome: FixOutcome = field(default_factory=FixOutcome)
    error: Optional[str] = None


def fix_data(path: str, data: bytes, rules: Sequence[type], allowed: Iterable[str]) -> FileFix:
    """Fix one file's bytes; the result keeps the file's encoding, BOM and line endings."""
    result = FileFix(path, old=data)
    try:
        text, encoding = decode_file(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        result.error = f"cannot decode file: {exc}"
        return result
    try:
        outcome = fix_text(text, path, rules, allowed)
    except Exception as exc:  # a bug of ours: the file stays as it was
        result.error = f"internal error while fixing: {type(exc).__name__}: {exc}"
        return result
    result.outcome = outcome
    if outcome.text is not None:
        try:
            result.new = outcome.text.encode(encoding)
        except UnicodeEncodeError as exc:
            result.error = f"fixed text cannot be encoded as {encoding}: {exc}"
    return result


def fix_notebook(path: str, data: bytes, rules: Sequence[type], allowed: Iterable[str]) -> FileFix:
    """Fix a notebook's code cells as one program; only the cells that change are rewritten."""
    from torchlint import notebook

    result = FileFix(path, old=data)

    def transform(text: str) -> Optional[str]:
        result.outcome = fix_text(text, path, rules, allowed)
        return result.outcome.text

    try:
        result.new = notebook.rewrite(data, transform)
    except notebook.NotebookError as exc:
        result.error = f"notebook not fixed: {exc}"
    except Exception as exc:  # a bug of ours: the file stays as it was
        result.error = f"internal error while fixing: {type(exc).__name__}: {exc}"
    return result


@dataclass
class FixRun:
    fixes: List[FileFix] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)  # for stderr, one line each
    results: list = field(default_factory=list)  # the check results, re-linted where written

    @property
    def changed(self) -> List[FileFix]:
        return [f for f in self.fixes if f.new is not None and f.error is None]


def _codes_for(path, config, enabled) -> frozenset:
    ignored = config.ignored_for(path) if getattr(config, "per_file_ignores", None) else set()
    return frozenset(code for code in enabled if code not in ignored)


def fix_files(files: Sequence[str], results: Sequence, config, enabled, *, unsafe: bool, write: bool) -> FixRun:
    """Fix the files whose check results hold an allowed fix; write them unless ``write`` is False.

    A notebook gets only its changed cells rewritten. A file that cannot be
    read, fixed or written is reported in ``errors``; the others go on.
    """
    from torchlint.rules import ALL_RULES
    from torchlint.runner import lint_data

    allowed = allowed_fixes(unsafe)
    run = FixRun(results=list(results))
    for index, (path, result) in enumerate(zip(files, results)):
        codes = _codes_for(path, config, enabled)
        wanted = [d for d in result.diagnostics if d.code in codes and getattr(d, "fix", None) in allowed]
        if not wanted:
            continue
        # Every enabled rule runs: a fix must not bring in a finding of another rule.
        rules = [rule for rule in ALL_RULES if rule.code in codes]
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            run.errors.append(f"{path}: cannot read file: {exc.strerror or exc}")
            continue
        fix = fix_notebook if path.endswith(".ipynb") else fix_data
        fixed = fix(path, data, rules, allowed)
        for code, line, reason in fixed.outcome.rejected:
            run.errors.append(f"{path}:{line}: {code} fix not applied: {reason}")
        if fixed.error is not None:
            run.errors.append(f"{path}: {fixed.error}")
        elif fixed.new is not None and write:
            try:
                write_atomic(path, fixed.new)
            except OSError as exc:
                fixed.error = f"cannot write fixed file: {exc.strerror or exc}"
                run.errors.append(f"{path}: {fixed.error}")
            else:  # what remains is what the file now holds, checked the way `check` does
                run.results[index] = lint_data(path, fixed.new, enabled)
        run.fixes.append(fixed)
    return run
