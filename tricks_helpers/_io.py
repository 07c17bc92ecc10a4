"""Reading a file the package did not just write, and writing one atomically (private).

- :func:`read_regular`: open without blocking (``O_NONBLOCK``), refuse what is not a regular
  file (a FIFO, a device such as ``/dev/zero`` behind a link, a folder) from ``fstat`` before
  anything is read, refuse a file larger than a bound before reading it, and name the file in
  every error.
- :func:`write_atomic` / :func:`atomic_target`: write under a unique hidden name in the same
  folder (host, process and a random part), then rename into place; on any error the
  temporary is removed and the target keeps what it held. Two writers of one target never
  share a temporary, so neither loses its write to the other's rename.

Used by :mod:`tricks_helpers._checkpoint_file` and :mod:`tricks_helpers.ddp.common`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["NotRegularFileError", "open_regular", "read_regular", "write_atomic", "atomic_target"]


class NotRegularFileError(ValueError):
    """A path that names a FIFO, a socket, a device or a folder where a file was expected."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _named(where: str, name: str) -> str:
    """How an error begins: ``where: 'name'`` (``load_checkpoint: 'a.pt' is a FIFO``), or the
    file's name alone where ``where`` is empty (``a.json: is a FIFO``): the file named once."""
    return f"{where}: {name!r}" if where else f"{name}:"


def open_regular(where: str, path: str | os.PathLike) -> tuple[int, os.stat_result]:
    """A read-only descriptor of ``path`` and its ``fstat``, opened without blocking.

    Every error names the file once: ``where: 'name' ...``, or ``name: ...`` with ``where`` empty.

    Raises:
        FileNotFoundError: ``path`` does not exist (named).
        NotRegularFileError: ``path`` (or what a link leads to) is not a regular file.
        PermissionError, OSError: it cannot be opened (named).
    """
    name = Path(path).name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{_named(where, name)} no such file") from None
    except IsADirectoryError:
        raise NotRegularFileError(f"{_named(where, name)} is a directory, not a file") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO without a writer, or a socket
            raise NotRegularFileError(f"{_named(where, name)} is not a regular file") from None
        said = f"{_named(where, name)} cannot be opened: {exc.strerror}"
        raise type(exc)(exc.errno, said) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise NotRegularFileError(
                f"{_named(where, name)} is {kind}, not a regular file; nothing was read"
            )
        os.set_blocking(fd, True)  # a regular file never blocks; reads are whole from here
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(
    where: str,
    path: str | os.PathLike,
    max_bytes: int,
    *,
    limit: Callable[[bytes, int], int] | None = None,
    head: int = 0,
) -> bytes:
    """The bytes of regular file ``path``, refused before reading when larger than ``max_bytes``.

    Args:
        max_bytes: the most bytes the file may hold (from ``fstat``, before any read).
        head: with ``limit``, how many bytes to read first.
        limit: ``limit(first_bytes, file_size)`` returns how many bytes the whole file may hold
            (a header's declared size), or raises; the rest is read only after it agrees.

    Raises:
        FileNotFoundError, NotRegularFileError, OSError: see :func:`open_regular`.
        ValueError: the file is larger than ``max_bytes`` or than ``limit`` allows, or grew
            while it was read (named).
    """
    name = Path(path).name
    fd, st = open_regular(where, path)
    try:
        if st.st_size > max_bytes:
            raise ValueError(
                f"{_named(where, name)} holds {st.st_size:,} bytes, more than {max_bytes:,}; "
                "nothing was read"
            )
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(head) if limit is not None else b""
            want = max_bytes if limit is None else min(max_bytes, limit(data, st.st_size))
            data += f.read(want - len(data) + 1)
        if len(data) > want:
            raise ValueError(f"{_named(where, name)} grew past {want:,} bytes while it was read")
        return data
    finally:
        os.close(fd)


def _temporary(path: Path) -> Path:
    return path.parent / f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp"


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike) -> Iterator[Path]:
    """A unique temporary beside ``path`` to write to; renamed onto ``path`` when the block
    ends without an error, removed when it raises."""
    path = Path(path)
    tmp = _temporary(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically through a unique temporary; returns ``path``."""
    path = Path(path)
    with atomic_target(path) as tmp:
        with open(tmp, "xb") as f:
            f.write(data)
    return path
