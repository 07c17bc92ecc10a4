"""A checkpoint file: a header line, the SHA-256 of the payload, the payload (chapter 02).

:mod:`tricks_helpers.resume` writes and reads its checkpoints through here, so a checkpoint
whose bytes changed after it was written is refused before anything is unpickled, and a file is
written atomically: under a unique temporary name in the same folder, renamed into place, and
never left behind (on any error, the temporary is removed and ``path`` keeps what it held).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

from tricks_helpers._checks import check_type

__all__ = ["MAGIC", "CheckpointFileError", "write_checked", "read_checked"]

#: The first line of every checkpoint file (the format and what the next line holds).
MAGIC = b"tricks_helpers.resume checkpoint, sha256 of the payload:\n"
_HEAD = len(MAGIC) + 65  # the header, 64 hex digits and a newline


class CheckpointFileError(ValueError):
    """A file that is not a checkpoint file, or fails its checksum (:mod:`tricks_helpers.resume`
    raises it as its ``CorruptCheckpointError``)."""


def _path(where: str, path: str | os.PathLike) -> Path:
    check_type(where, "path", path, (str, os.PathLike))
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{where}: {path.name!r} is a directory, not a checkpoint file")
    return path


def write_checked(where: str, path: str | os.PathLike, payload: bytes) -> Path:
    """Write ``payload`` with its header and SHA-256 to ``path``, atomically.

    Raises:
        TypeError: ``path`` is not a str or PathLike.
        IsADirectoryError: ``path`` is a directory.
        FileNotFoundError: the folder of ``path`` does not exist.
        OSError: the write failed (nothing is left behind; ``path`` is unchanged).
    """
    path = _path(where, path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{where}: the folder of {path.name!r} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n")
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def read_checked(where: str, path: str | os.PathLike) -> bytes:
    """The payload of checkpoint file ``path``, after its header and SHA-256 are checked.

    Raises:
        TypeError: ``path`` is not a str or PathLike.
        IsADirectoryError: ``path`` is a directory.
        FileNotFoundError: ``path`` does not exist.
        CheckpointFileError: the header is missing or damaged, or the payload fails its
            checksum (any changed byte of the file is one or the other).
    """
    path = _path(where, path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{where}: no checkpoint at {path.name!r}") from None
    if not data.startswith(MAGIC) or len(data) < _HEAD or data[_HEAD - 1 : _HEAD] != b"\n":
        raise CheckpointFileError(
            f"{where}: {path.name!r} is not a checkpoint written by save_checkpoint "
            f"(its header is missing or damaged)"
        )
    payload = data[_HEAD:]
    if hashlib.sha256(payload).hexdigest().encode("ascii") != data[len(MAGIC) : _HEAD - 1]:
        raise CheckpointFileError(
            f"{where}: {path.name!r} fails its checksum (changed since it was written); "
            f"nothing was loaded"
        )
    return payload
