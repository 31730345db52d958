"""The editor's unsaved texts of project modules: on every surface the newest text of a module wins.

The language server registers the text of every Python document open in the editor
(``set_buffer``) and drops it when the document closes; the project index
(``model/project.py``) then summarises a sibling module from its buffer, not the file on
disk, and a result that read a module is reused only while the module's text is unchanged
(``current_stamp``). The CLI and flake8 register none: their modules are the files.
A leaf: the cache's check (``runner.dependencies_unchanged``) imports it on every run.
"""
from __future__ import annotations

import os
import threading
from typing import Dict, Optional, Tuple

# A buffer's stamp: no (mtime_ns, size) of a file has a negative first member, so a result that
# read a buffer is never taken for one that read the disk.
BUFFER_STAMP = -1
_BUFFERS: Dict[str, Tuple[Tuple[int, int], str]] = {}  # absolute path -> (stamp, text)
_LOCK = threading.Lock()


def set_buffer(path: str, text: str) -> None:
    """The editor holds ``text`` for the module at ``path``: it wins over the disk."""
    with _LOCK:
        _BUFFERS[os.path.abspath(path)] = ((BUFFER_STAMP, hash(text)), text)


def drop_buffer(path: str) -> None:
    """The editor closed the module: the file on disk is its text again."""
    with _LOCK:
        _BUFFERS.pop(os.path.abspath(path), None)


def buffer_of(path) -> Optional[Tuple[Tuple[int, int], str]]:
    """(stamp, text) of the module's buffer, or None when the editor holds none."""
    if not _BUFFERS:
        return None
    with _LOCK:
        return _BUFFERS.get(os.path.abspath(path))


def current_stamp(path: str) -> Optional[Tuple[int, int]]:
    """The module's stamp now: its buffer's, else its file's (mtime_ns, size); None when neither is."""
    buffer = buffer_of(path)
    if buffer is not None:
        return buffer[0]
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
