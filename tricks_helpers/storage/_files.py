"""Private file helpers shared by the storage modules (one home for each).

- :func:`temporary_name` / :func:`remove_tree`: the hidden siblings writers build under, and
  their removal (which reports failure instead of ignoring it).
- :func:`hash_file`: SHA-256 of an open binary file, read in 1 MiB blocks (never parsed).
- :class:`PerProcess`: a handle opened lazily, once per process, never pickled.
- :func:`identity`: what names one file or directory on this machine ``(st_dev, st_ino)``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

T = TypeVar("T")

HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def temporary_name(path: Path, kind: str = "tmp") -> Path:
    """A hidden sibling of ``path`` naming this host and process: ``.<name>.<kind>-...``."""
    return path.parent / f".{path.name}.{kind}-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def remove_tree(p: Path) -> OSError | None:
    """Remove a file or a directory tree; return the first error (None when all is gone)."""
    errors: list[OSError] = []
    try:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, onerror=lambda _f, _p, exc: errors.append(exc[1]))
        else:
            p.unlink(missing_ok=True)
    except OSError as exc:
        errors.append(exc)
    if errors or p.exists() or p.is_symlink():
        return errors[0] if errors else OSError(f"{p.name!r} is still there")
    return None


def hash_file(f: BinaryIO) -> str:
    """Hex SHA-256 of an open binary file from its start, read in 1 MiB blocks."""
    f.seek(0)
    h = hashlib.sha256()
    while block := f.read(1 << 20):
        h.update(block)
    return h.hexdigest()


def identity(st: os.stat_result) -> tuple[int, int]:
    """``(st_dev, st_ino)``: one file or directory on this machine."""
    return st.st_dev, st.st_ino


class PerProcess(Generic[T]):
    """A handle made by ``opener`` on first use in each process; a copy (fork or pickle)
    never hands an open handle to another process."""

    def __init__(self, opener: Callable[[], T], closer: Callable[[T], Any] | None = None):
        self.opener, self.closer = opener, closer
        self._handle: T | None = None
        self._pid: int | None = None

    def get(self) -> T:
        if self._handle is None or self._pid != os.getpid():  # first use in this process
            self._handle, self._pid = self.opener(), os.getpid()
        return self._handle

    @property
    def is_open(self) -> bool:
        return self._handle is not None and self._pid == os.getpid()

    def close(self) -> None:
        if self.is_open and self.closer is not None:
            self.closer(self._handle)
        self._handle, self._pid = None, None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None, "_pid": None}
