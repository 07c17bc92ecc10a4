"""Datasets over a store: the two rules of loading data with workers (introduced in chapter 03).

Chapter 03 prints this module's two key methods. The rest of :mod:`tricks_helpers.storage` is
plumbing (formats, checksums, atomic writes); the lesson is here:

1. **Open file handles lazily, once per process.** A DataLoader copies the dataset into each
   worker (by ``fork`` or by pickling). An LMDB environment or an HDF5 file opened in the parent
   must not be used in a worker, so :meth:`StoreReading._read` opens a reader on first use in
   each process (a :class:`~tricks_helpers.storage._files.PerProcess` handle, which a copy
   never hands over).
2. **Split an IterableDataset between workers.** Every worker runs ``__iter__`` on its own copy:
   without a split each record would come ``num_workers`` times. :meth:`StoreIterableDataset.
   __iter__` asks :func:`torch.utils.data.get_worker_info` which worker it is and keeps its
   share: whole tar shards when there are at least as many shards as workers (each worker then
   reads its files front to back), single records otherwise. No record is lost or repeated.

``check=True`` (the default) compares every value read with its SHA-256 in the manifest: one
hash per sample, a small cost next to decoding an image (chapter 03 measures it), and a
damaged file then raises :class:`~tricks_helpers.storage.CorruptRecordError` instead of
handing wrong bytes to training. With either setting a reader never lets a library parse a
file that could kill the process: sizes are compared with the manifest, and an LMDB file's tree
with its digest, before it is opened (see :mod:`~tricks_helpers.storage.lmdb_store`); the
datasets do not hash whole files, so run :func:`~tricks_helpers.storage.verify` on a store you
copied or suspect. Only regular files inside the store are opened (a record or shard replaced by
a symbolic link, a FIFO or a device raises :class:`~tricks_helpers.storage.CorruptRecordError`
naming it, and never blocks), and a record is read only from a file of the size the manifest
states, so ``check=False`` still never serves bytes from outside the store.

A store written again at the same path while a dataset reads it is never mixed in: the
dataset reads the generation it opened, or raises
:class:`~tricks_helpers.storage.StoreReplacedError` (see
:class:`~tricks_helpers.storage.store.Store`).

**Threads.** Both datasets are thread-safe: threads of one process that share a dataset share
its reader, and take turns on it (one lock per dataset and process, held for the read of one
record, not for its checksum or transform). DataLoader workers are processes, each with its
own reader and lock, and read in parallel.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

import numpy as np
from torch.utils.data import Dataset, IterableDataset, get_worker_info

from tricks_helpers._checks import check_bool, check_callable, check_int
from tricks_helpers.storage._files import PerProcess
from tricks_helpers.storage.formats import reader
from tricks_helpers.storage.manifest import StorageError
from tricks_helpers.storage.reading import replaced_or
from tricks_helpers.storage.store import checked, open_store

__all__ = ["StoreDataset", "StoreIterableDataset", "StoreReading", "key_and_value"]


def key_and_value(key: str, value: bytes) -> tuple[str, bytes]:
    """The default transform: a record as it is stored."""
    return key, value


class StoreReading:
    """What both datasets share: the checked manifest and one reader per process (rule 1)."""

    def __init__(
        self,
        where: str,
        path: str | os.PathLike,
        transform: Callable[[str, bytes], Any] | None,
        check: bool,
    ):
        self.store = open_store(path, where)  # reads the manifest only: no file is opened
        self.transform = (
            key_and_value if transform is None else check_callable(where, "transform", transform)
        )
        self.check = check_bool(where, "check", check)
        self._reader = PerProcess(partial(reader, self.store))  # a copy never hands it over

    def _read(self, index: int) -> Any:
        try:
            with self._reader.using() as reader:  # opened on first use in this process;
                value = reader.get(index)  # threads take turns (a reader is not thread-safe)
            if self.check:
                checked(self.store, index, value)  # one SHA-256 of the value
        except (StorageError, OSError) as exc:
            raise replaced_or(self.store, exc) from None  # a replaced store is not damage
        return self.transform(self.store.keys[index], value)

    def __len__(self) -> int:
        return len(self.store)

    @property
    def handle_open(self) -> bool:
        """Whether this process has opened its own reader (for teaching and tests)."""
        return self._reader.is_open


class StoreDataset(StoreReading, Dataset):
    """Map-style dataset: ``ds[i]`` is ``transform(key, value)`` of record ``i``.

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write`.
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.
        check: compare each value with its SHA-256 (default True).

    Thread-safe (threads take turns on the process's reader; see the module docstring).

    Raises:
        TypeError: wrong argument types. StorageError: ``path`` is not a store (when reading:
        CorruptRecordError / TruncatedStoreError for a damaged one, StoreReplacedError for one
        written again since it was opened).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        transform: Callable[[str, bytes], Any] | None = None,
        *,
        check: bool = True,
    ):
        super().__init__("StoreDataset", path, transform, check)

    def __getitem__(self, index: int) -> Any:
        return self._read(self.store.position("StoreDataset", index))


class StoreIterableDataset(StoreReading, IterableDataset):
    """Iterable dataset that splits the records between DataLoader workers (rule 2).

    With ``shuffle=True`` the shard order (tar) or record order (other formats) is permuted
    with a generator seeded by ``(seed, epoch)``, identically in every worker, before the split;
    tar samples then pass through a shuffle buffer of ``shuffle_buffer`` samples per worker
    (reads stay front to back). Call :meth:`set_epoch` before each epoch; persistent workers
    keep the epoch they started with.

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write`.
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.
        shuffle: shuffle as described above.
        shuffle_buffer: samples in the tar shuffle buffer (>= 1).
        seed: base seed of the shuffles, in ``[0, 2**63)``.
        check: compare each value with its SHA-256 (default True).

    Raises:
        TypeError: wrong argument types. ValueError: out-of-range buffer or seed.
        StorageError: ``path`` is not a store.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        transform: Callable[[str, bytes], Any] | None = None,
        *,
        shuffle: bool = False,
        shuffle_buffer: int = 256,
        seed: int = 0,
        check: bool = True,
    ):
        where = "StoreIterableDataset"
        self.shuffle = check_bool(where, "shuffle", shuffle)
        self.shuffle_buffer = check_int(where, "shuffle_buffer", shuffle_buffer, minimum=1)
        self.seed = check_int(where, "seed", seed, minimum=0, maximum=2**63 - 1)
        self.epoch = 0
        super().__init__(where, path, transform, check)

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch (>= 0) that seeds the next iteration's shuffle."""
        self.epoch = check_int("set_epoch", "epoch", epoch, minimum=0)

    def __iter__(self) -> Iterator[Any]:
        info = get_worker_info()  # None in the main process
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        rng = np.random.default_rng([self.seed, self.epoch])  # the same in every worker
        shards = self.store.shard_members()  # tar: record indices of each shard
        if len(shards) >= workers:  # whole shards per worker
            order = rng.permutation(len(shards)) if self.shuffle else range(len(shards))
            mine = [i for s in list(order)[worker::workers] for i in shards[s]]
        else:  # record by record
            order = rng.permutation(len(self)) if self.shuffle else range(len(self))
            mine = list(order)[worker::workers]
        samples = (self._read(int(i)) for i in mine)
        if self.shuffle and shards:
            samples = buffer_shuffle(
                samples, self.shuffle_buffer, np.random.default_rng([self.seed, self.epoch, worker])
            )
        yield from samples


def buffer_shuffle(items: Iterable, size: int, rng: np.random.Generator) -> Iterator:
    """Shuffle a stream with a buffer of ``size`` items (each item is yielded once)."""
    buf: list = []
    for item in items:
        if len(buf) < size:
            buf.append(item)
            continue
        j = int(rng.integers(len(buf)))
        buf[j], item = item, buf[j]
        yield item
    rng.shuffle(buf)
    yield from buf
