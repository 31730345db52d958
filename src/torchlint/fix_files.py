"""Fixing files: ``torchlint check --fix``, ``--unsafe-fixes`` and ``--diff``.

The front end's side of fixing: read a file's bytes, decode them the way
Python does, run the fix loop (``fixer.fix_text``) on the text or on a
notebook's code cells, encode the result back the same way (a UTF-8 BOM, a
``# -*- coding`` declaration and CRLF line endings survive), and write it
atomically (see :func:`write_fixed`) only when it changed. Diffs for ``--diff``.
"""
from __future__ import annotations

import io
import os
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Sequence, Tuple

from torchlint.codes import NOQA_CHECKS
from torchlint.diagnostic import error_summary
from torchlint.fixer import FixOutcome, allowed_fixes, fix_text
from torchlint.safe_io import FolderNotWritable, raise_hidden_interrupt, read_regular, signals_deferred, temporary_file
from torchlint.request import LintRequest


def decode_file(data: bytes) -> Tuple[str, str]:
    """(text, encoding) the way Python reads a source file; the encoding re-creates a BOM."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):  # a BOM the codec kept (utf-8 with a BOM is utf-8-sig)
        text = text[1:]
        encoding = "utf-8-sig"
    return text, encoding


class ChangedWhileFixing(OSError):
    """The file no longer holds the bytes its fix was computed from: someone saved it meanwhile."""


def write_fixed(path: str, old: bytes, new: bytes) -> None:
    """Replace the file's content ``old`` with ``new``, never losing a save made meanwhile.

    The file must still hold ``old`` (checked after the fix was computed and
    again just before the replace), or :class:`ChangedWhileFixing` is raised
    and the file stays as the other writer left it. The new file keeps the
    permission bits, owner and group; a read-only file is refused
    (``PermissionError``), as an editor would. A file with other hard links,
    whose owner this process cannot give a new file, or in a folder where no
    new file can be made, is rewritten in place (same inode). Either way the
    signals that end a run wait until the file is old or new, and no
    temporary file is left.
    """
    target = os.path.realpath(path)  # write through a symlink, never over it
    st = os.stat(target)
    if not os.access(target, os.W_OK) or not st.st_mode & 0o222:  # read-only, even for root
        raise PermissionError(13, "Permission denied (the file is read-only)", path)
    _still_holds(target, old, path)
    if st.st_nlink > 1 or not _replaced(target, old, new, st, path):
        _write_in_place(target, old, new, path)


def _still_holds(target: str, old: bytes, path: str) -> None:
    with open(target, "rb") as fh:
        if fh.read() != old:
            raise ChangedWhileFixing(0, "the file changed while it was being fixed; left as it is", path)


def _replaced(target: str, old: bytes, new: bytes, st: os.stat_result, path: str) -> bool:
    """Rename a fsynced copy holding ``new``, with ``target``'s mode, owner and group, over
    ``target``; False when the folder takes no new file or the owner cannot be given to it."""
    try:
        with temporary_file(os.path.dirname(target) or ".", ".torchlint-", ".tmp") as (fh, tmp):
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            if not _owned_as(tmp, st):
                return False
            os.chmod(tmp, st.st_mode & 0o7777)  # after chown, which clears set-id bits
            _still_holds(target, old, path)  # again: the copy took time
            os.replace(tmp, target)
            return True
    except FolderNotWritable:
        return False


def _owned_as(tmp: str, st: os.stat_result) -> bool:
    """Give ``tmp`` the owner and group of ``st``; False when this process cannot."""
    if not hasattr(os, "chown") or (st.st_uid, st.st_gid) == _owner(tmp):
        return True
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except PermissionError:
        return False
    return True


def _owner(path: str) -> tuple:
    st = os.stat(path)
    return st.st_uid, st.st_gid


def _write_in_place(target: str, old: bytes, new: bytes, path: str) -> None:
    with signals_deferred(), open(target, "r+b") as fh:
        if fh.read() != old:
            raise ChangedWhileFixing(0, "the file changed while it was being fixed; left as it is", path)
        fh.seek(0)
        fh.write(new)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


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


def fix_data(path: str, data: bytes, request: LintRequest, allowed: Iterable[str]) -> FileFix:
    """Fix one file's bytes as ``request`` says; the result keeps the file's encoding, BOM and line endings."""
    result = FileFix(path, old=data)
    try:
        text, encoding = decode_file(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        result.error = f"cannot decode file: {exc}"
        return result
    try:
        outcome = fix_text(text, path, request, allowed)
    except Exception as exc:  # a bug of ours: the file stays as it was
        raise_hidden_interrupt(exc)
        result.error = f"internal error while fixing: {error_summary(exc)}"
        return result
    result.outcome = outcome
    if outcome.text is not None:
        try:
            result.new = outcome.text.encode(encoding)
        except UnicodeEncodeError as exc:
            result.error = f"fixed text cannot be encoded as {encoding}: {exc}"
    return result


def fix_notebook(path: str, data: bytes, request: LintRequest, allowed: Iterable[str]) -> FileFix:
    """Fix a notebook's code cells as one program; only the cells that change are rewritten.
    The noqa checks' fixes (TL010, TL011) are offered for .py files only: they rewrite a whole
    file's comments, and a notebook's program is its cells joined."""
    from torchlint import notebook

    result = FileFix(path, old=data)
    request = request.with_codes(request.codes - NOQA_CHECKS)

    def transform(text: str) -> Optional[str]:
        result.outcome = fix_text(text, path, request, allowed)
        return result.outcome.text

    try:
        result.new = notebook.rewrite(data, transform)
    except notebook.NotebookError as exc:
        result.error = f"notebook not fixed: {exc}"
    except Exception as exc:  # a bug of ours: the file stays as it was
        raise_hidden_interrupt(exc)
        result.error = f"internal error while fixing: {error_summary(exc)}"
    return result


@dataclass
class FixRun:
    fixes: List[FileFix] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)  # for stderr, one line each
    results: list = field(default_factory=list)  # the check results, re-linted where written

    @property
    def changed(self) -> List[FileFix]:
        return [f for f in self.fixes if f.new is not None and f.error is None]


def fix_files(files: Sequence[str], results: Sequence, request_for: Callable[[str], LintRequest], *,
              unsafe: bool, write: bool) -> FixRun:
    """Fix the files whose check results hold an allowed fix; write them unless ``write`` is False.

    Each file is fixed for its request (``request_for(path)``: the one ``check`` used). A
    notebook gets only its changed cells rewritten. A file that cannot be read, fixed or
    written is reported in ``errors``; the others go on.
    """
    from torchlint.runner import lint_data

    allowed = allowed_fixes(unsafe)
    run = FixRun(results=list(results))
    for index, (path, result) in enumerate(zip(files, results)):
        request = request_for(path)
        wanted = [d for d in result.diagnostics if d.code in request.codes and d.fix in allowed]
        if not wanted:
            continue
        try:
            data = read_regular(path)
        except OSError as exc:
            run.errors.append(f"{path}: cannot read file: {exc.strerror or exc}")
            continue
        # Every enabled rule runs: a fix must not bring in a finding of another rule.
        notebook = path.endswith(".ipynb")
        fixed = (fix_notebook if notebook else fix_data)(path, data, request, allowed)
        for code, line, reason in fixed.outcome.rejected:
            run.errors.append(f"{path}:{line}: {code} fix not applied: {reason}")
        if fixed.error is not None:
            run.errors.append(f"{path}: {fixed.error}")
        elif fixed.new is not None and write:
            try:
                write_fixed(path, data, fixed.new)
            except ChangedWhileFixing as exc:
                fixed.error = exc.strerror
                run.errors.append(f"{path}: {fixed.error}")
            except OSError as exc:
                fixed.error = f"cannot write fixed file: {exc.strerror or exc}"
                run.errors.append(f"{path}: {fixed.error}")
            else:  # what remains is what the file now holds: the fix loop's last lint of it
                remaining = None if notebook else fixed.outcome.remaining
                run.results[index] = remaining if remaining is not None else lint_data(path, fixed.new, request)
        run.fixes.append(fixed)
    return run
