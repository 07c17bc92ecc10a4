"""Reading a whole store back, and verifying it (introduced in chapter 03).

:func:`verify` (and :func:`read_all` with ``check=True``) checks, in this order:

1. the manifest: its digest and every field (:func:`tricks_helpers.storage.store.open_store`);
2. the size of every payload file (:class:`TruncatedStoreError`; a short memory-mapped file
   would crash an LMDB reader with SIGBUS);
3. for LMDB and HDF5, the SHA-256 of every payload file **before the library opens it**: a
   damaged page can crash the process inside LMDB or HDF5, so a file that differs from what
   was written is reported (:class:`CorruptRecordError` naming the file) and never parsed;
4. every record read back against its size and SHA-256 (the first bad record is named);
5. for tar, every shard parsed by :mod:`tarfile` against the manifest, then for tar the
   SHA-256 of every shard (headers and padding included).

So verify never crashes the process on a damaged store and never accepts one: any changed
byte of a payload file or of the manifest raises :class:`CorruptRecordError` (or its subclass
:class:`TruncatedStoreError`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from tricks_helpers._checks import check_bool
from tricks_helpers.storage import tar_store
from tricks_helpers.storage._files import hash_file
from tricks_helpers.storage.formats import FORMAT_MODULES, reader
from tricks_helpers.storage.manifest import (
    CorruptRecordError,
    StorageError,
    StoreInfo,
    StoreReplacedError,
    TruncatedStoreError,
)
from tricks_helpers.storage.store import Store, checked, open_store

__all__ = [
    "replaced_or",
    "check_sizes",
    "check_files",
    "read_all",
    "read_store",
    "verify",
    "ReadCalls",
    "read_syscalls",
]


def replaced_or(store: Store, exc: BaseException) -> BaseException:
    """The error to raise for ``exc`` met while reading ``store``: :class:`StoreReplacedError`
    when the store was written again meanwhile (a missing or changed file is then no damage),
    else ``exc`` itself."""
    if isinstance(exc, (StorageError, OSError)) and not isinstance(exc, StoreReplacedError):
        if store.replaced():
            return store.replaced_error()
    return exc


def _first_record_in(store: Store, rel: str, actual: int | None) -> int | None:
    if not store.records:
        return None
    if store.format != "tar":
        return 0
    shard = store.manifest["shards"].index(rel)
    members = store.shard_members()[shard]
    for i in members:
        if actual is None or store.records[i][4] + store.records[i][1] > actual:
            return i
    return members[0] if members else None


def check_sizes(store: Store) -> None:
    """Raise :class:`TruncatedStoreError` where a payload file is missing or of the wrong size,
    naming the first affected record where it can be known."""
    if store.format == "folder":
        expected = {r[0]: (i, r[1]) for i, r in enumerate(store.records)}
    else:
        expected = {rel: (None, entry[0]) for rel, entry in store.files.items()}
    for rel, (index, size) in expected.items():
        try:
            st = store.stat(rel)
        except CorruptRecordError as exc:  # a link, a FIFO, a device: named, with its record
            key = None if index is None else store.keys[index]
            raise CorruptRecordError(str(exc), index, key) from None
        actual = None if st is None else st.st_size
        if actual != size:
            if index is None:
                index = _first_record_in(store, rel, actual)
            key = None if index is None else store.keys[index]
            where = f"; first affected record {index} {key!r}" if key is not None else ""
            state = "is missing" if actual is None else f"has {actual} bytes, expected {size}"
            raise TruncatedStoreError(
                f"store {store.name!r} ({store.format}): file {rel!r} {state}{where}", index, key
            )


def check_files(store: Store) -> None:
    """Raise :class:`CorruptRecordError` naming the first payload file whose SHA-256 differs
    from the manifest's (files are hashed in 1 MiB blocks, never parsed)."""
    for rel, (_size, want) in store.files.items():
        with store.open(rel) as f:
            got = hash_file(f)
        if got != want:
            raise CorruptRecordError(
                f"store {store.name!r} ({store.format}): file {rel!r} "
                f"fails its checksum (changed since it was written)"
            )


def read_all(path: str | os.PathLike, *, check: bool = True) -> Iterator[tuple[str, bytes]]:
    """Yield every ``(key, value)`` of a store in write order, exactly as written.

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write`.
        check: run every check of :func:`verify` (see the module docstring) as the records
            are read; with ``False`` only the manifest and file sizes are checked.

    Yields:
        ``(key, value)`` pairs.

    Raises:
        TypeError: wrong argument types.
        StorageError: not a store. CorruptRecordError / TruncatedStoreError naming the first
        bad record or file (raised when reached, so consume the iterator).
    """
    store = open_store(path, "read_all")
    check_bool("read_all", "check", check)
    return _read_all(store, check)


def read_store(store: Store, *, check: bool = True) -> Iterator[tuple[str, bytes]]:
    """:func:`read_all` of an opened :class:`Store`: the records of the generation it holds."""
    return _read_all(store, check)


def _read_all(store: Store, check: bool) -> Iterator[tuple[str, bytes]]:
    try:
        yield from _read_all_unguarded(store, check)
    except (StorageError, OSError) as exc:
        raise replaced_or(store, exc) from None


def _read_all_unguarded(store: Store, check: bool) -> Iterator[tuple[str, bytes]]:
    check_sizes(store)
    safe = FORMAT_MODULES[store.format].SAFE_TO_PARSE_DAMAGED
    if check and not safe:
        check_files(store)
    r = reader(store)
    try:
        for index, key in enumerate(store.keys):
            value = r.get(index)
            yield key, checked(store, index, value) if check else value
    finally:
        r.close()
    if check and store.format == "tar":
        tar_store.check_structure(store)
    if check and safe:
        check_files(store)


def verify(path: str | os.PathLike) -> StoreInfo:
    """Check a whole store: manifest, file sizes, file and record checksums, tar structure.

    Never lets LMDB or HDF5 parse a file that differs from what was written, so it cannot
    crash the process on a damaged store. A store written again while it is verified is
    verified whole in one generation, or :class:`StoreReplacedError` is raised (never a false
    "fails its checksum").

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write`.

    Returns:
        The store's :class:`StoreInfo` when everything is intact.

    Raises:
        TypeError: ``path`` is not a str or PathLike.
        StorageError: ``path`` is not a store (or has an unsupported manifest version).
        TruncatedStoreError: a payload file is shorter or longer than recorded, or missing.
        StoreReplacedError: the store was written again while it was verified.
        CorruptRecordError: the manifest, a file or a record differs from what was written
            (``.index``/``.key`` name the first bad record where one can be named).
    """
    store = open_store(path, "verify")
    for _ in _read_all(store, True):
        pass
    return store.info()


_THREAD_IO = "/proc/thread-self/io"


@dataclass
class ReadCalls:
    """What :func:`read_syscalls` counted: ``calls`` and ``bytes`` (None where unavailable)."""

    available: bool
    calls: int | None = None
    bytes: int | None = None


def _thread_io() -> tuple[int, int, int]:
    with open(_THREAD_IO, "rb") as f:
        text = f.read()
    fields = dict(line.split(b": ") for line in text.splitlines())
    return int(fields[b"syscr"]), int(fields[b"rchar"]), len(text)


@contextlib.contextmanager
def read_syscalls() -> Iterator[ReadCalls]:
    """Count the ``read``-family system calls of the calling thread inside the block (Linux).

    The counts come from the kernel's per-thread I/O accounting (``/proc/thread-self/io``:
    ``syscr``, ``rchar``), less the reads this function makes itself. A memory-mapped read
    (LMDB, a numpy memmap) makes no read system call at all: its pages arrive as page faults.
    Count on the thread doing the reads (a DataLoader with ``num_workers=0``).

    Yields:
        A :class:`ReadCalls`, filled when the block ends; ``available`` is False (and the
        counts None) where the kernel does not provide the counters.
    """
    result = ReadCalls(available=os.path.exists(_THREAD_IO))
    before = _thread_io() if result.available else None
    yield result
    if before is not None:
        after = _thread_io()
        # this function's own reads: 2 calls (data, then end of file) and the first text
        result.calls = after[0] - before[0] - 2
        result.bytes = after[1] - before[1] - before[2]
