"""Private file helpers shared by the storage modules (one home for each).

- :func:`temporary_name` / :func:`remove_tree`: the hidden siblings writers build under, and
  their removal (which reports failure instead of ignoring it).
- :func:`hash_file`: SHA-256 of an open binary file, read in 1 MiB blocks (never parsed).
- :class:`PerProcess`: a handle opened lazily, once per process, never pickled, shared by
  threads under a lock.
- :func:`identity`: what names one file or directory on this machine ``(st_dev, st_ino)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

T = TypeVar("T")

HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def temporary_name(path: Path, kind: str = "tmp") -> Path:
    """A hidden sibling of ``path`` naming this host and process: ``.<name>.<kind>-...``."""
    return path.parent / f".{path.name}.{kind}-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def remove_tree(p: Path) -> OSError | None:
    """Remove a file or a directory tree; return the first error (None when all is gone).

    A tree that cannot be removed because a folder in it is read-only (a store's class folder
    made read-only by its user) is made writable by its owner, folder by folder, and removed
    again: only hidden temporaries and replaced stores are ever passed here.
    """
    error = _remove_tree_once(p)
    if error is not None and p.is_dir() and not p.is_symlink():
        _make_writable(p)
        error = _remove_tree_once(p)
    return error


def _make_writable(d: Path) -> None:
    """``chmod u+rwx`` on ``d`` and every folder below it (links are not followed); a folder
    that cannot be changed (another owner's) is left as it is."""
    try:
        os.chmod(d, os.stat(d).st_mode | 0o700)  # d is a folder, never a link (see callers)
        children = list(os.scandir(d))
    except OSError:
        return
    for entry in children:
        if entry.is_dir(follow_symlinks=False):
            _make_writable(Path(entry.path))


def _remove_tree_once(p: Path) -> OSError | None:
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
    never hands an open handle to another process.

    Threads of one process share the handle under one lock: :meth:`using` holds it for the
    whole use (a seek then a read, an LMDB transaction, an HDF5 file are not safe to use from
    two threads at once), and :meth:`get` holds it while the handle is opened (two threads
    never open it twice). A copy gets a fresh lock, so a lock held at ``fork`` time never
    blocks the child.
    """

    def __init__(self, opener: Callable[[], T], closer: Callable[[T], Any] | None = None):
        self.opener, self.closer = opener, closer
        self._handle: T | None = None
        self._pid: int | None = None
        self._lock: threading.RLock | None = None
        self._lock_pid: int | None = None

    def _guard(self) -> threading.RLock:
        pid = os.getpid()
        if self._lock is None or self._lock_pid != pid:
            with _LOCKS:  # one lock per object and process, even when threads race here
                if self._lock is None or self._lock_pid != pid:
                    self._lock, self._lock_pid = threading.RLock(), pid
        return self._lock

    def get(self) -> T:
        with self._guard():
            if self._handle is None or self._pid != os.getpid():  # first use in this process
                self._handle, self._pid = self.opener(), os.getpid()
            return self._handle

    @contextlib.contextmanager
    def using(self) -> Iterator[T]:
        """The handle, held under this process's lock for the whole ``with`` block."""
        with self._guard():
            yield self.get()

    @property
    def is_open(self) -> bool:
        return self._handle is not None and self._pid == os.getpid()

    def close(self) -> None:
        with self._guard():
            if self.is_open and self.closer is not None:
                self.closer(self._handle)
            self._handle, self._pid = None, None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None, "_pid": None, "_lock": None, "_lock_pid": None}


_LOCKS = threading.Lock()  # guards the creation of each PerProcess lock
if hasattr(os, "register_at_fork"):  # a child forked while another thread held it: a new one
    os.register_at_fork(after_in_child=lambda: globals().update(_LOCKS=threading.Lock()))
