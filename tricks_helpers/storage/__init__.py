"""Storage formats for training data: write, verify, read (introduced in chapter 03).

One public API over four on-disk formats of ``(key: str, value: bytes)`` records, each in its
own module: ``"folder"`` (:mod:`~tricks_helpers.storage.folder`, one file per record),
``"lmdb"`` (:mod:`~tricks_helpers.storage.lmdb_store`), ``"tar"`` shards
(:mod:`~tricks_helpers.storage.tar_store`) and ``"hdf5"``
(:mod:`~tricks_helpers.storage.hdf5_store`). Every store is a directory holding its payload and
a JSON manifest (:mod:`~tricks_helpers.storage.manifest`) with every key, size and SHA-256, so
:func:`read_all`, :func:`verify` and the datasets take only a path.

- :func:`write` (:mod:`~tricks_helpers.storage.writing`) builds a store under a temporary name,
  verifies it and swaps it into place atomically: a writer killed at any moment leaves
  nothing, the old store, or the complete new one; never a half-written store.
- :func:`verify` / :func:`read_all` (:mod:`~tricks_helpers.storage.reading`) check the manifest,
  every file and every record, and never crash on a damaged store; :func:`read_syscalls`
  counts the read system calls a block makes (the invariant behind the speed of a format).
- :class:`StoreDataset` / :class:`StoreIterableDataset`
  (:mod:`~tricks_helpers.storage.datasets`, the chapter's lesson): one reader per process,
  records split between DataLoader workers without loss or repeat.
- :class:`InMemoryStore`, :func:`write_memmap`, :class:`MemmapDataset`
  (:mod:`~tricks_helpers.storage.arrays`): a RAM cache and pre-decoded arrays.

Writing, reading and verifying import neither torch nor anything else heavy; the datasets
and arrays (which need torch) are imported on first use of their names. Importing this package
changes no global state.
"""

from __future__ import annotations

import importlib
from typing import Any

from tricks_helpers.storage.manifest import (
    FORMATS,
    MANIFEST,
    CorruptRecordError,
    StorageError,
    StorageWarning,
    StoreInfo,
    StoreReplacedError,
    TruncatedStoreError,
)
from tricks_helpers.storage.reading import read_all, read_syscalls, verify
from tricks_helpers.storage.store import info
from tricks_helpers.storage.writing import recover, write

__all__ = [
    "FORMATS",
    "MANIFEST",
    "StorageError",
    "CorruptRecordError",
    "TruncatedStoreError",
    "StoreReplacedError",
    "StorageWarning",
    "StoreInfo",
    "write",
    "recover",
    "read_all",
    "verify",
    "info",
    "StoreDataset",
    "StoreIterableDataset",
    "InMemoryStore",
    "write_memmap",
    "MemmapDataset",
    "read_syscalls",
]

_LAZY = {
    "StoreDataset": "datasets",
    "StoreIterableDataset": "datasets",
    "InMemoryStore": "arrays",
    "write_memmap": "arrays",
    "MemmapDataset": "arrays",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    if name in ("datasets", "arrays"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"datasets", "arrays"})
