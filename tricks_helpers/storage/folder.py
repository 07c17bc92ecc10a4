"""The ``"folder"`` format: one file per record, in class folders (introduced in chapter 03).

How most people keep images (``cat/0001.jpg``). Keys are relative paths: ``/`` makes
sub-folders; absolute paths, ``..``, ``.``, empty components, backslashes and the manifest's
name are refused when writing, and again when a manifest is read (a key never reaches a file
outside the store). Each record's file is its own payload file, so the record checksums are the
file checksums, and reading a damaged file can only give wrong bytes, never crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tricks_helpers.storage.manifest import TruncatedStoreError, check_folder_key
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
    """Reads record ``i`` from its own file (one open and read per record)."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, index: int) -> bytes:
        key = self.store.keys[index]
        try:
            with self.store.open(key) as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise TruncatedStoreError(
                f"store {self.store.name!r} (folder): record {index} {key!r} is missing", index, key
            ) from None

    def close(self) -> None:
        pass
