"""The ``"hdf5"`` format: one HDF5 file of values and offsets (introduced in chapter 03).

``data.h5`` holds a 1-D ``uint8`` dataset ``values`` (every value, in write order) and an
``int64`` dataset ``offsets`` (``len + 1`` entries): record ``i`` is
``values[offsets[i]:offsets[i + 1]]``.

**The file is built in memory** (HDF5's ``core`` driver, no backing store) and written to disk
by Python's own file I/O in one piece. This is a documented choice, not an accident: when a
write to disk fails inside HDF5 (a full disk, a file-size limit), h5py 3.16 crashes the process
with a segmentation fault while closing the file, whatever the caller does. Built in memory, a
failed write is an ordinary :class:`OSError`. The price: writing an hdf5 store needs about twice
its size in RAM; use ``"lmdb"`` or ``"tar"`` for stores larger than memory.

Reading opens the file lazily, read-only, once per reader; every error h5py raises on a damaged
file (``OSError``, ``KeyError``, ``TypeError``, ...) becomes a :class:`CorruptRecordError`.
:func:`tricks_helpers.storage.verify` hashes the file whole before HDF5 parses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tricks_helpers.storage.manifest import SINGLE_FILE, CorruptRecordError, TruncatedStoreError
from tricks_helpers.storage.store import Store

#: Whether a reader may parse a file that fails its checksum (HDF5: no).
SAFE_TO_PARSE_DAMAGED = False


class Writer:
    """Appends values to an in-memory HDF5 file; writes it to disk on :meth:`close`."""

    _CHUNK = 1 << 16  # bytes per HDF5 chunk (the file's granularity)
    _FLUSH = 1 << 20  # bytes buffered before they are appended

    def __init__(self, root: Path, **_: Any):
        import h5py

        self.target = root / SINGLE_FILE["hdf5"]
        self.f = h5py.File(str(self.target), "w", driver="core", backing_store=False)
        self.values = self.f.create_dataset(
            "values", shape=(0,), maxshape=(None,), dtype=np.uint8, chunks=(self._CHUNK,)
        )
        self.offsets = [0]
        self.buf = bytearray()

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        self.buf += value
        self.offsets.append(self.offsets[-1] + len(value))
        if len(self.buf) >= self._FLUSH:
            self._flush()
        return []

    def _flush(self) -> None:
        if self.buf:
            start = self.values.shape[0]
            self.values.resize((start + len(self.buf),))
            self.values[start:] = np.frombuffer(bytes(self.buf), dtype=np.uint8)
            self.buf = bytearray()

    def close(self) -> dict:
        self._flush()
        self.f.create_dataset("offsets", data=np.asarray(self.offsets, dtype=np.int64))
        self.f.flush()
        image = self.f.id.get_file_image()
        self.f.close()
        with open(self.target, "wb") as out:  # a full disk raises OSError here, cleanly
            out.write(image)
        return {}

    def abort(self) -> None:
        if self.f.id.valid:  # nothing was written to disk by HDF5: closing is safe
            self.f.close()


class Reader:
    """Random access to the values; opens the file on first use."""

    def __init__(self, store: Store):
        self.store = store
        self.f: Any = None

    def _damaged(self, why: str, index: int | None = None) -> CorruptRecordError:
        key = None if index is None else self.store.keys[index]
        who = "the HDF5 file" if index is None else f"record {index} {key!r}"
        return CorruptRecordError(
            f"store {self.store.name!r} (hdf5): {who} cannot be read ({why})", index, key
        )

    def _open(self) -> None:
        import h5py

        try:
            rel = SINGLE_FILE["hdf5"]
            # a regular file in the store (never a link, a FIFO or a device), of its size
            st, want = self.store.stat(rel), self.store.files[rel][0]
            if st is None or st.st_size != want:
                size = "missing" if st is None else f"{st.st_size} bytes"
                raise TruncatedStoreError(
                    f"store {self.store.name!r} (hdf5): file {rel!r} is {size}, expected {want}"
                )
            self.f = h5py.File(self.store.file_path(rel), "r")
            self.values = self.f["values"]
            offsets = np.asarray(self.f["offsets"][:])
            ok = (
                self.values.dtype == np.uint8
                and self.values.ndim == 1
                and offsets.dtype == np.int64
                and offsets.shape == (len(self.store) + 1,)
            )
        except CorruptRecordError:  # TruncatedStoreError, or not a regular file: as it is
            raise
        except Exception as exc:  # h5py raises many types on a damaged file
            self.close()
            raise self._damaged(type(exc).__name__) from None
        sizes = np.asarray([r[1] for r in self.store.records], dtype=np.int64)
        if not (
            ok
            and offsets[0] == 0
            and np.array_equal(np.diff(offsets), sizes)
            and offsets[-1] <= self.values.shape[0]
        ):
            self.close()
            raise self._damaged("its offsets table does not match the manifest")
        self.offsets = offsets

    def get(self, index: int) -> bytes:
        if self.f is None:
            self._open()
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        if end == start:
            return b""
        try:
            return self.values[start:end].tobytes()
        except Exception as exc:  # h5py raises many types on a damaged file
            raise self._damaged(type(exc).__name__, index) from None

    def close(self) -> None:
        if self.f is not None:
            try:
                self.f.close()
            finally:
                self.f = None
