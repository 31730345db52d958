"""Reading the files torchlint consults, and writing temporary files, without hanging or leaking.

A FIFO named ``.gitignore`` or ``requirements.txt`` would block a plain ``open()``
forever, and a link to ``/dev/zero`` would fill memory: files are read only when
they are regular, up to a size limit (``read_regular``). A temporary file written
beside another exists only while the signals that end a run wait
(``temporary_file``), so none outlives Ctrl-C, SIGTERM or SIGHUP; and Ctrl-C is not lost
when a library's cleanup turns it into another error (``raise_hidden_interrupt``).
"""
from __future__ import annotations

import os
import signal
import stat
import sys
from contextlib import contextmanager
from typing import Any, BinaryIO, Iterator, Optional, Tuple

# Config, ignore and requirement files: far beyond any real one, far below what hurts.
SMALL_FILE_LIMIT = 10 * 2**20


class NotRegularFile(OSError):
    """A FIFO, device, socket or directory where a file was expected, or a file over the
    limit; ``strerror`` says which, in the words a one-line message needs."""


def read_regular(path, limit: Optional[int] = None) -> bytes:
    """The bytes of ``path`` (symbolic links followed) when it is a regular file of at most
    ``limit`` bytes (None: any size); otherwise ``NotRegularFile``. Never blocks: the open
    is non-blocking, so a FIFO without a writer is refused, not waited on."""
    try:
        fh = open(path, "rb", opener=_open_nonblocking)
    except IsADirectoryError:
        raise NotRegularFile(0, "is a directory", str(path)) from None
    with fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise NotRegularFile(0, "not a regular file", str(path))
        data = fh.read() if limit is None else fh.read(limit + 1)
    if limit is not None and len(data) > limit:
        raise NotRegularFile(0, f"larger than {limit // 2**20} MiB", str(path))
    return data


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))


# The signals that end a process by default and are sent from outside it (a terminal,
# kill, timeout, a service manager). SIGKILL and SIGSTOP cannot wait; faults must not.
_ENDING = tuple(getattr(signal, name) for name in
                ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM")
                if hasattr(signal, name))


class signals_deferred:
    """The signals that end a run wait until the block is done, then act as they would have.

    Python runs signal handlers in the main thread whichever thread the kernel chose,
    so the handlers are swapped for ones that take note: blocking the main thread's
    signal mask would not do, since another thread (``engine``'s big-stack worker) would
    take the signal and the main thread would still raise. Elsewhere than the main
    thread no handler can be set, and none raises there anyway."""

    def __enter__(self) -> "signals_deferred":
        import threading

        self._caught: list = []
        self._old: dict = {}
        if threading.current_thread() is not threading.main_thread():
            return self
        try:
            for signum in _ENDING:
                if signal.getsignal(signum) not in (signal.SIG_IGN, None):  # None: set outside Python
                    self._old[signum] = signal.signal(signum, self._note)
        except BaseException:  # a signal before every handler was swapped: as if none was
            self._restore()
            raise
        return self

    def _note(self, signum: int, frame) -> None:
        self._caught.append(signum)

    def _restore(self) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)

    def __exit__(self, *exc) -> None:
        self._restore()
        for signum in dict.fromkeys(self._caught):  # each once: its own handler now acts
            signal.raise_signal(signum)


def raise_hidden_interrupt(exc: BaseException) -> None:
    """Raise the KeyboardInterrupt behind ``exc``, if one is in its chain; otherwise nothing.

    For the handlers that report a bug of ours and go on: libcst computes a node's
    position in a ``finally`` that fails (KeyError) when Ctrl-C cut the codegen it wraps
    short, so the interrupt reaches them dressed as an ordinary error and the run would
    carry on with the user's Ctrl-C lost."""
    seen = set()
    pending = [exc.__cause__, exc.__context__]
    while pending:
        behind = pending.pop()
        if behind is None or id(behind) in seen:
            continue
        if isinstance(behind, KeyboardInterrupt):
            raise behind
        seen.add(id(behind))
        pending += [behind.__cause__, behind.__context__]


@contextmanager
def interrupts_unhidden() -> Iterator[None]:
    """A block whose error is raised as the KeyboardInterrupt behind it, if there is one."""
    try:
        yield
    except Exception as exc:
        raise_hidden_interrupt(exc)
        raise


class FolderNotWritable(PermissionError):
    """No new file can be made in the folder (a read-only folder of a writable file)."""


@contextmanager
def temporary_file(folder: str, prefix: str, suffix: str = "") -> Iterator[Tuple[BinaryIO, str]]:
    """``(binary file, path)`` of a new file in ``folder``, with the signals that end a run
    deferred for as long as it exists. The block writes it, closes it and renames it
    over its target; whatever happens in the block, the name is gone afterwards."""
    import tempfile  # here: a run that writes nothing does not pay for it

    with signals_deferred():
        try:
            fd, path = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
        except PermissionError as exc:
            raise FolderNotWritable(exc.errno, exc.strerror, folder) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh, path
        finally:
            remove(path)  # after the block's rename the name is free: nothing is removed


def remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def toml_library() -> Any:
    """``tomllib`` (``tomli`` before Python 3.11), imported when a TOML file is read: a run
    that reads none (an editor's warm check of one file) does not pay for the parser."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib
