"""Data held as arrays: an in-memory cache and pre-decoded memmaps (introduced in chapter 03).

- :class:`InMemoryStore` keeps a whole store's values in RAM in one contiguous ``uint8``
  buffer plus an offsets array: forked DataLoader workers share its pages copy-on-write, and
  reading a sample touches no per-sample Python object (whose reference count would copy the
  page it lives on into each worker).
- :func:`write_memmap` writes pre-decoded ``uint8`` arrays of one shape into one standard
  ``.npy`` file, through a temporary name (see :mod:`tricks_helpers.storage.writing`);
  :class:`MemmapDataset` reads it through ``numpy.memmap``, opened lazily once per process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from tricks_helpers._checks import check_bool, check_callable, check_int
from tricks_helpers.storage.datasets import key_and_value
from tricks_helpers.storage.manifest import StorageError, as_path, open_store
from tricks_helpers.storage.reading import read_all
from tricks_helpers.storage.writing import _progress, _remove, check_target, temporary_name

__all__ = ["InMemoryStore", "write_memmap", "MemmapDataset"]


class InMemoryStore(Dataset):
    """A whole store's values held in RAM in one contiguous ``uint8`` numpy buffer.

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write` (read once,
            fully verified as it is loaded).
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.

    Raises:
        StorageError: not a store; CorruptRecordError on a damaged store.
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
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.buffer = np.empty(int(self.offsets[-1]), dtype=np.uint8)
        for i, (_key, value) in enumerate(read_all(path, check=True)):
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
    shape = tuple(shape)
    if not shape or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in shape
    ):
        raise ValueError(f"write_memmap: shape must be positive integers, got {shape!r}")
    shape = tuple(int(s) for s in shape)
    check_bool("write_memmap", "overwrite", overwrite)
    check_target("write_memmap", path, overwrite, lambda p: p.is_file())
    tmp = temporary_name(path)
    try:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(count, *shape))
        n = 0
        for a in _progress(arrays, count, progress, "write memmap"):
            a = np.asarray(a)
            if n >= count:
                raise ValueError(f"write_memmap: more than count={count} arrays")
            if a.dtype != np.uint8 or a.shape != shape:
                raise ValueError(
                    f"write_memmap: array {n} is {a.dtype} {a.shape}, expected uint8 {shape}"
                )
            out[n] = a
            n += 1
        if n != count:
            raise ValueError(f"write_memmap: got {n} arrays, expected count={count}")
        out.flush()
        del out
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise
    return path


class MemmapDataset(Dataset):
    """Map-style dataset over a ``.npy`` file of pre-decoded arrays, read through a memmap.

    The memmap is opened lazily once per process (each DataLoader worker maps the file itself;
    the OS page cache is shared). ``ds[i]`` is a writable ``torch.uint8`` tensor (a copy of row
    ``i``), paired with ``labels[i]`` when labels are given.

    Args:
        path: a ``.npy`` file written by :func:`write_memmap`.
        labels: optional sequence of ints, one per row.

    Raises:
        StorageError: the file is missing or not a 2-D+ uint8 ``.npy``. ValueError: labels of
        the wrong length.
    """

    def __init__(self, path: str | os.PathLike, labels: Iterable[int] | None = None):
        self.path = as_path("MemmapDataset", path)
        try:
            arr = np.load(self.path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise StorageError(
                f"MemmapDataset: cannot read {self.path.name!r} as .npy ({type(exc).__name__})"
            ) from None
        if not isinstance(arr, np.ndarray) or arr.dtype != np.uint8 or arr.ndim < 2:
            raise StorageError(
                f"MemmapDataset: {self.path.name!r} holds "
                f"{getattr(arr, 'dtype', type(arr).__name__)} of shape "
                f"{getattr(arr, 'shape', None)}; expected uint8 with a leading "
                f"sample axis"
            )
        self.shape = arr.shape
        del arr
        self.labels = None if labels is None else torch.as_tensor(list(labels), dtype=torch.long)
        if self.labels is not None and len(self.labels) != self.shape[0]:
            raise ValueError(f"MemmapDataset: {len(self.labels)} labels for {self.shape[0]} arrays")
        self._arr: np.ndarray | None = None
        self._pid: int | None = None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: int) -> Any:
        index = check_int("MemmapDataset", "index", index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"MemmapDataset: index {index} out of range for {len(self)} arrays")
        if self._arr is None or self._pid != os.getpid():
            self._arr, self._pid = np.load(self.path, mmap_mode="r"), os.getpid()
        x = torch.from_numpy(np.array(self._arr[index]))
        return x if self.labels is None else (x, self.labels[index])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_arr"], state["_pid"] = None, None
        return state
