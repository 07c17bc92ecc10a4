"""A checkpoint file: a header line, the SHA-256 and size of the payload, the payload (chapter 02).

:mod:`tricks_helpers.resume` writes and reads its checkpoints through here, so a checkpoint
whose bytes changed after it was written is refused before anything is unpickled, and a file is
written atomically: under a unique temporary name in the same folder, renamed into place, and
never left behind (on any error, the temporary is removed and ``path`` keeps what it held).

A file is read as one the package did not write (:func:`tricks_helpers._io.read_regular`):
opened without blocking, refused when it is not a regular file (a FIFO, a link to
``/dev/zero``), and refused before its payload is read when its size is not the one its header
declares or is over :data:`MAX_BYTES` (a 3 GiB sparse file is never read). Every error names the
file.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from tricks_helpers._checks import check_type
from tricks_helpers._io import read_regular, write_atomic

__all__ = ["MAGIC", "MAX_BYTES", "CheckpointFileError", "write_checked", "read_checked"]

#: The first line of every checkpoint file (the format and what the next line holds).
MAGIC = b"tricks_helpers.resume checkpoint, sha256 and size of the payload:\n"
#: The largest checkpoint file read (chapter 02's are about 30 KB).
MAX_BYTES = 2**30
# the second line: 64 hex digits, a space, the payload's size in decimal, a newline
_SECOND = re.compile(rb"([0-9a-f]{64}) (0|[1-9][0-9]{0,11})\n")
_HEAD_MAX = len(MAGIC) + 64 + 1 + 12 + 1


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
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    write_atomic(path, MAGIC + digest + b" %d\n" % len(payload) + payload)
    return path


def read_checked(where: str, path: str | os.PathLike) -> bytes:
    """The payload of checkpoint file ``path``, after its header and SHA-256 are checked.

    Raises:
        TypeError: ``path`` is not a str or PathLike.
        IsADirectoryError: ``path`` is a directory.
        FileNotFoundError: ``path`` does not exist.
        CheckpointFileError: ``path`` is not a regular file (a FIFO, a device), the header is
            missing or damaged, the file's size is not the one its header declares or over
            :data:`MAX_BYTES`, or the payload fails its checksum (any changed byte of the file
            is one of these).
    """
    path = _path(where, path)
    name = path.name
    not_ours = f"{where}: {name!r} is not a checkpoint written by save_checkpoint"

    def declared(head: bytes, size: int) -> int:
        second = _SECOND.match(head, len(MAGIC))
        if not head.startswith(MAGIC) or second is None:
            raise CheckpointFileError(f"{not_ours} (its header is missing or damaged)")
        want = second.end() + int(second.group(2))
        if want != size:
            raise CheckpointFileError(
                f"{not_ours} (its header declares {want:,} bytes, the file holds {size:,}); "
                "nothing was read"
            )
        return want

    try:
        data = read_regular(where, path, MAX_BYTES, limit=declared, head=_HEAD_MAX)
    except FileNotFoundError:
        raise FileNotFoundError(f"{where}: no checkpoint at {name!r}") from None
    except CheckpointFileError:
        raise
    except ValueError as exc:  # not a regular file, over MAX_BYTES, grew while read
        raise CheckpointFileError(str(exc)) from None
    second = _SECOND.match(data, len(MAGIC))
    payload = data[second.end() :]
    if hashlib.sha256(payload).hexdigest().encode("ascii") != second.group(1):
        raise CheckpointFileError(
            f"{where}: {name!r} fails its checksum (changed since it was written); "
            f"nothing was loaded"
        )
    return payload
