"""The ``"folder"`` format: one file per record, in class folders (introduced in chapter 03).

How most people keep images (``cat/0001.jpg``). Keys are relative paths: ``/`` makes
sub-folders; absolute paths, ``..``, ``.``, empty components, backslashes and the manifest's
name are refused when writing, and again when a manifest is read (a key never reaches a file
outside the store). Each record's file is its own payload file, so the record checksums are the
file checksums, and reading a damaged file can only give wrong bytes, never crash.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tricks_helpers.storage.manifest import (
    CorruptRecordError,
    TruncatedStoreError,
    check_folder_key,
)
from tricks_helpers.storage.store import Store

#: Whether a reader may parse a file that fails its checksum (plain reads: yes).
SAFE_TO_PARSE_DAMAGED = True


class Writer:
    """Writes each value to ``root/<key>``."""

    def __init__(self, root: Path, **_: Any):
        self.root = root
        self.files: set[tuple[str, ...]] = set()
        self.dirs: set[tuple[str, ...]] = set()

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        parts = check_folder_key(key, index)
        if parts in self.dirs or any(parts[:i] in self.files for i in range(1, len(parts))):
            raise ValueError(
                f"record {index}: key {key!r} clashes with another key used as a "
                f"folder (or a folder with a file) in the 'folder' format"
            )
        self.files.add(parts)
        self.dirs.update(parts[:i] for i in range(1, len(parts)))
        target = self.root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(value)
        return []

    def close(self) -> dict:
        return {}

    def abort(self) -> None:
        pass


class Reader:
    """Reads record ``i`` from its own file (one open, one ``fstat`` and two reads per record)."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, index: int) -> bytes:
        """Record ``index``'s bytes: read only from a regular file inside the store (never
        through a symbolic link, never from a FIFO or a device), and only when the file has the
        size the manifest states (with or without ``check``): a read never allocates more."""
        key, size = self.store.records[index][:2]
        where = f"store {self.store.name!r} (folder): record {index} {key!r}"
        try:
            fd = self.store.open_fd(key)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise TruncatedStoreError(f"{where} is missing", index, key) from None
        except CorruptRecordError as exc:
            raise CorruptRecordError(str(exc), index, key) from None  # names the file: the key
        with open(fd, "rb", buffering=0) as f:
            actual = os.fstat(fd).st_size
            if actual != size:
                raise TruncatedStoreError(
                    f"{where} has {actual} bytes, expected {size}", index, key
                )
            value = f.read(size)
            grown = f.read(1)  # the end of the file where the manifest puts it (2 reads in all)
        if len(value) != size or grown:  # changed between the fstat and the reads
            raise TruncatedStoreError(f"{where} changed size while it was read", index, key)
        return value

    def close(self) -> None:
        pass
