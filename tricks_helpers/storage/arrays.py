"""Data held as arrays: an in-memory cache and pre-decoded memmaps (introduced in chapter 03).

- :class:`InMemoryStore` keeps a whole store's values in RAM in one contiguous ``uint8``
  buffer plus an offsets array: forked DataLoader workers share its pages copy-on-write, and
  reading a sample touches no per-sample Python object (whose reference count would copy the
  page it lives on into each worker).
- :func:`write_memmap` writes pre-decoded ``uint8`` arrays of one shape into one standard
  ``.npy`` file, through a temporary name (see :mod:`tricks_helpers.storage.writing`), with
  ordinary file writes: a full disk is an :class:`OSError` (a write through a memory map of a
  sparse file would kill the process with SIGBUS instead).
- :class:`MemmapDataset` reads one row with one ``pread`` from a file it opened lazily, once per
  process: the same page cache as ``numpy.memmap``, but a file truncated while it is open gives
  a short read and :class:`~tricks_helpers.storage.TruncatedStoreError`, never SIGBUS. A worker
  started after the file was written again raises
  :class:`~tricks_helpers.storage.StoreReplacedError` instead of reading another data set.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from tricks_helpers._checks import check_bool, check_callable, check_int, check_type
from tricks_helpers.storage._files import PerProcess, identity, remove_tree, temporary_name
from tricks_helpers.storage.datasets import key_and_value
from tricks_helpers.storage.manifest import (
    CorruptRecordError,
    StorageError,
    StoreReplacedError,
    TruncatedStoreError,
    as_path,
)
from tricks_helpers.storage.reading import check_sizes, read_store, replaced_or
from tricks_helpers.storage.store import open_store
from tricks_helpers.storage.writing import _progress, check_target

__all__ = ["InMemoryStore", "write_memmap", "MemmapDataset"]


class InMemoryStore(Dataset):
    """A whole store's values held in RAM in one contiguous ``uint8`` numpy buffer.

    Thread-safe once built: a read only slices the buffer.

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write` (read once,
            fully verified as it is loaded; keys and values come from one generation of it).
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.

    Raises:
        StorageError: not a store; CorruptRecordError on a damaged store;
            StoreReplacedError when the store is written again while it is loaded.
    """

    def __init__(
        self, path: str | os.PathLike, transform: Callable[[str, bytes], Any] | None = None
    ):
        store = open_store(path, "InMemoryStore")
        self.transform = (
            key_and_value
            if transform is None
            else check_callable("InMemoryStore", "transform", transform)
        )
        sizes = np.asarray([r[1] for r in store.records], dtype=np.int64)
        try:  # every payload file has the size its manifest states, and then
            check_sizes(store)
        except (StorageError, OSError) as exc:
            raise replaced_or(store, exc) from None  # a replaced store is not damage
        on_disk = sum(e[0] for e in store.files.values()) if store.files else int(sizes.sum())
        if int(sizes.sum()) > on_disk:  # a crafted manifest never makes it allocate more
            raise CorruptRecordError(
                f"InMemoryStore: store {store.name!r}: its manifest lists {int(sizes.sum())} "
                f"value bytes in {on_disk} bytes of files"
            )
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.buffer = np.empty(int(self.offsets[-1]), dtype=np.uint8)
        # the values of the generation whose manifest gave the keys and sizes (one snapshot):
        # a store written again meanwhile raises StoreReplacedError, never mixes the two
        for i, (_key, value) in enumerate(read_store(store, check=True)):
            self.buffer[self.offsets[i] : self.offsets[i + 1]] = np.frombuffer(value, np.uint8)
        self.keys = store.keys
        self.store = store

    @property
    def nbytes(self) -> int:
        """Bytes held by the value buffer."""
        return int(self.buffer.nbytes)

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> Any:
        index = self.store.position("InMemoryStore", index)
        value = self.buffer[self.offsets[index] : self.offsets[index + 1]].tobytes()
        return self.transform(self.keys[index], value)


def write_memmap(
    path: str | os.PathLike,
    arrays: Iterable[np.ndarray],
    count: int,
    shape: tuple[int, ...],
    *,
    overwrite: bool = False,
    progress: bool | None = None,
) -> Path:
    """Write ``count`` pre-decoded ``uint8`` arrays of one ``shape`` into one ``.npy`` file.

    The file is a standard ``.npy`` of shape ``(count, *shape)``, written under a temporary
    name and renamed into place when complete (``os.replace``, atomic); stale temporaries of
    killed writers are removed. :class:`MemmapDataset` (or ``np.load(mmap_mode="r")``) reads it
    without loading it whole.

    Args:
        path: the ``.npy`` file to create.
        arrays: exactly ``count`` arrays, each ``uint8`` with shape ``shape``.
        count: number of arrays (>= 1).
        shape: shape of one array, e.g. ``(64, 64, 3)``.
        overwrite: replace an existing ``.npy`` file at ``path``.
        progress: tqdm progress bar, as in :func:`tricks_helpers.storage.write`.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        TypeError: wrong argument types.
        ValueError: bad count/shape, an array of the wrong shape or dtype, too few or too many
            arrays, a path not ending in ``.npy``.
        FileExistsError: ``path`` exists and ``overwrite`` is False.
        StorageError: ``path`` is a symbolic link or a directory.
    """
    path = as_path("write_memmap", path)
    if path.suffix != ".npy":
        raise ValueError(f"write_memmap: path must end in .npy, got {path.name!r}")
    count = check_int("write_memmap", "count", count, minimum=1)
    check_type("write_memmap", "shape", shape, (tuple, list))
    if isinstance(arrays, (str, bytes)) or not isinstance(arrays, Iterable):
        raise TypeError(
            f"write_memmap: arrays must be an iterable of uint8 arrays, got {type(arrays).__name__}"
        )
    shape = tuple(shape)
    if not shape or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in shape
    ):
        raise ValueError(f"write_memmap: shape must be positive integers, got {shape!r}")
    shape = tuple(int(s) for s in shape)
    check_bool("write_memmap", "overwrite", overwrite)
    check_target("write_memmap", path, overwrite, _why_not_npy)
    tmp = temporary_name(path)
    header = {"descr": "|u1", "fortran_order": False, "shape": (count, *shape)}
    try:
        with open(tmp, "xb") as out:
            np.lib.format.write_array_header_1_0(out, header)
            n = 0
            for a in _progress(arrays, count, progress, "write memmap"):
                a = np.asarray(a)
                if n >= count:
                    raise ValueError(f"write_memmap: more than count={count} arrays")
                if a.dtype != np.uint8 or a.shape != shape:
                    raise ValueError(
                        f"write_memmap: array {n} is {a.dtype} {a.shape}, expected uint8 {shape}"
                    )
                out.write(np.ascontiguousarray(a).data)  # a full disk: OSError here
                n += 1
            if n != count:
                raise ValueError(f"write_memmap: got {n} arrays, expected count={count}")
        os.replace(tmp, path)
    except BaseException:
        remove_tree(tmp)  # best effort: the original error matters more
        raise
    return path


def _labels(labels: Any, count: int) -> torch.Tensor:
    """``labels`` as a 1-D int64 tensor of ``count`` integers (TypeError/ValueError else)."""
    where = "MemmapDataset: labels must be a 1-D sequence of integers, one per array"
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
        raise TypeError(f"{where}; got {type(labels).__name__}")
    if isinstance(labels, torch.Tensor):
        labels = labels.detach().cpu().numpy()
    arr = np.asarray(labels if isinstance(labels, np.ndarray) else list(labels))
    if arr.ndim != 1:
        raise ValueError(f"{where}; got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{where}; got {arr.dtype} values")
    if arr.size and arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{where}; {arr.max()} does not fit in int64")
    if len(arr) != count:
        raise ValueError(f"MemmapDataset: {len(arr)} labels for {count} arrays")
    return torch.as_tensor(arr.astype(np.int64))


def _why_not_npy(path: Path) -> str | None:
    return None if path.is_file() else "not a file"


def _open_regular(path: Path) -> int:
    """A descriptor of ``path`` when it is a regular file (a link to one is followed); a FIFO
    or a device is refused without blocking: ``ValueError`` saying what it is."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device or other special file"
        raise ValueError(f"it is {kind}, not a regular file")
    os.set_blocking(fd, True)
    return fd


def _open_rows(path: Path) -> tuple[int, tuple[int, ...], int]:
    """Open a ``.npy`` file of ``uint8`` rows: ``(descriptor, shape, data offset)``."""
    fd = _open_regular(path)
    try:
        with open(fd, "rb", closefd=False) as f:
            version = np.lib.format.read_magic(f)
            read_header = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }.get(version)
            if read_header is None:
                raise ValueError(f".npy version {version}")
            shape, fortran, dtype = read_header(f)
            offset = f.tell()
        if dtype != np.uint8 or fortran or len(shape) < 2:
            raise ValueError(f"holds {dtype} of shape {shape}")
        return fd, tuple(shape), offset
    except BaseException:
        os.close(fd)
        raise


class MemmapDataset(Dataset):
    """Map-style dataset over a ``.npy`` file of pre-decoded arrays, read through a memmap.

    The memmap is opened lazily once per process (each DataLoader worker maps the file itself;
    the OS page cache is shared). ``ds[i]`` is a writable ``torch.uint8`` tensor (a copy of row
    ``i``), paired with ``labels[i]`` when labels are given.

    Thread-safe: each read is one positional ``pread``; threads of one process share one
    descriptor, opened once under a lock. The path must be a regular file (or a link to one):
    a FIFO or a device is refused without blocking.

    Args:
        path: a ``.npy`` file written by :func:`write_memmap`.
        labels: optional sequence of ints, one per row.

    Raises:
        StorageError: the file is missing or not a 2-D+ uint8 ``.npy``. TypeError: labels that
        are not integers. ValueError: labels of the wrong length or not 1-D.
    """

    def __init__(self, path: str | os.PathLike, labels: Iterable[int] | None = None):
        self.path = as_path("MemmapDataset", path)
        try:
            fd, self.shape, self.offset = _open_rows(self.path)
        except (OSError, ValueError) as exc:
            why = str(exc) if isinstance(exc, ValueError) else type(exc).__name__
            raise StorageError(
                f"MemmapDataset: cannot read {self.path.name!r} as a .npy of uint8 rows with a "
                f"leading sample axis ({why})"
            ) from None
        st = os.fstat(fd)
        os.close(fd)
        self.identity, self.row_bytes = identity(st), int(np.prod(self.shape[1:]))
        self.file_bytes = self.offset + self.shape[0] * self.row_bytes
        if st.st_size != self.file_bytes:
            raise TruncatedStoreError(
                f"MemmapDataset: {self.path.name!r} has {st.st_size} bytes, "
                f"expected {self.file_bytes}"
            )
        self.labels = None if labels is None else _labels(labels, self.shape[0])
        self._file = PerProcess(self._open, os.close)

    def _open(self) -> int:
        """This process's descriptor of the file, after checking it is the one measured."""
        try:
            fd = _open_regular(self.path)
        except FileNotFoundError:
            raise StoreReplacedError(f"MemmapDataset: {self.path.name!r} was removed") from None
        except ValueError:  # replaced by a FIFO or a device: never read, never waited on
            fd = None
        if fd is None or identity(os.fstat(fd)) != self.identity:
            if fd is not None:
                os.close(fd)
            raise StoreReplacedError(
                f"MemmapDataset: {self.path.name!r} was replaced while reading (written again "
                f"at the same path); open it again to read the new version"
            )
        return fd

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: int) -> Any:
        index = check_int("MemmapDataset", "index", index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"MemmapDataset: index {index} out of range for {len(self)} arrays")
        x = torch.empty(self.shape[1:], dtype=torch.uint8)
        at = self.offset + (index % len(self)) * self.row_bytes
        got = os.preadv(self._file.get(), [x.numpy().reshape(-1)], at)  # no map: no SIGBUS
        if got != self.row_bytes:
            raise TruncatedStoreError(
                f"MemmapDataset: {self.path.name!r} was truncated while open "
                f"(row {index % len(self)} has {got} of {self.row_bytes} bytes)"
            )
        return x if self.labels is None else (x, self.labels[index])
