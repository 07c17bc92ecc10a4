"""The ``"lmdb"`` format: one memory-mapped LMDB key-value file (introduced in chapter 03).

Record ``i`` is stored under the 8-byte big-endian key ``i``; the text keys live in the
manifest. LMDB has no checksums of its own pages, and a damaged page can crash the process
inside the library (SIGSEGV, SIGBUS or an abort): :func:`tricks_helpers.storage.verify`
therefore hashes ``data.mdb`` whole before LMDB opens it.

Readers open the environment read-only, without a lock file, lazily, once per process. py-lmdb
refuses to open the same files twice in one process, so readers in one process share one
environment per **file identity** ``(st_dev, st_ino)`` of ``data.mdb``, reference-counted: a
store written again at the same path is a new file and gets a new environment (never a stale
one); an environment inherited through ``fork`` is closed in the child and opened afresh.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from typing import Any

from tricks_helpers._checks import check_int
from tricks_helpers.storage.manifest import SINGLE_FILE, CorruptRecordError, Store

#: Whether a reader may parse a file that fails its checksum (LMDB: no, it may crash).
SAFE_TO_PARSE_DAMAGED = False
_DIR = "lmdb"
# (pid, st_dev, st_ino) of data.mdb -> [environment, readers using it]
_ENVS: dict[tuple[int, int, int], list] = {}


class Writer:
    """Writes values in transactions of ``_BATCH`` records; the map grows as needed."""

    _BATCH = 256

    def __init__(self, root: Path, map_size: int = 1 << 26, **_: Any):
        import lmdb

        map_size = check_int("write", "map_size", map_size, minimum=1 << 12)
        self.lmdb = lmdb
        self.env = lmdb.open(
            str(root / _DIR),
            map_size=map_size,
            subdir=True,
            lock=False,
            readahead=False,
            meminit=False,
            max_dbs=0,
            sync=False,
            metasync=False,
        )
        self.pending: list[tuple[bytes, bytes]] = []

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        self.pending.append((index.to_bytes(8, "big"), value))
        if len(self.pending) >= self._BATCH:
            self._flush()
        return []

    def _flush(self) -> None:
        while self.pending:
            try:
                with self.env.begin(write=True) as txn:
                    for k, v in self.pending:
                        txn.put(k, v)
                self.pending = []
            except self.lmdb.MapFullError:
                self.env.set_mapsize(self.env.info()["map_size"] * 2)

    def close(self) -> dict:
        self._flush()
        self.env.sync(True)
        self.env.close()
        return {}

    def abort(self) -> None:
        self.env.close()


def _release(key: tuple[int, int, int], txn: Any) -> None:
    entry = _ENVS.get(key)
    if entry is None or key[0] != os.getpid():
        return
    try:
        txn.abort()
    except Exception:  # the environment may already be closed
        pass
    entry[1] -= 1
    if entry[1] <= 0:
        del _ENVS[key]
        entry[0].close()


class Reader:
    """Random access to the values; opens the shared environment on first use."""

    def __init__(self, store: Store):
        self.store = store
        self.txn: Any = None

    def _open(self) -> None:
        import lmdb

        path = self.store.path / _DIR
        st = os.stat(self.store.path / SINGLE_FILE["lmdb"])
        key = (os.getpid(), st.st_dev, st.st_ino)
        for other in [k for k in _ENVS if k[0] != key[0]]:
            _ENVS.pop(other)[0].close()  # inherited through fork: unusable here, close it
        try:
            if key not in _ENVS:
                _ENVS[key] = [
                    lmdb.open(
                        str(path),
                        readonly=True,
                        lock=False,
                        readahead=False,
                        meminit=False,
                        subdir=True,
                    ),
                    0,
                ]
            env = _ENVS[key][0]
            self.txn = env.begin(buffers=False)
        except lmdb.Error as exc:
            raise CorruptRecordError(
                f"store {self.store.name!r} (lmdb): cannot open the LMDB "
                f"file ({type(exc).__name__})"
            ) from None
        _ENVS[key][1] += 1
        self._finalizer = weakref.finalize(self, _release, key, self.txn)

    def get(self, index: int) -> bytes:
        import lmdb

        if self.txn is None:
            self._open()
        try:
            value = self.txn.get(index.to_bytes(8, "big"))
            why = "not found"
        except lmdb.Error as exc:
            value, why = None, type(exc).__name__
        if value is None:
            key = self.store.keys[index]
            raise CorruptRecordError(
                f"store {self.store.name!r} (lmdb): record {index} {key!r} cannot be read ({why})",
                index,
                key,
            )
        return value

    def close(self) -> None:
        if self.txn is not None:
            self._finalizer()
            self.txn = None
