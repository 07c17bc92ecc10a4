"""Small stores the storage probe's cases build and read back, in a scratch folder (issue 24)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tricks_helpers import storage

#: The records every case's store holds: 20 keys in one class folder, 1 to 20 bytes each.
RECS = [(f"c/{i:03d}", bytes([i]) * (i + 1)) for i in range(20)]


def shuffled(tmp: Path, epoch: int = 0, **kw: Any) -> list:
    ds = storage.StoreIterableDataset(store(tmp), shuffle=True, **kw)
    ds.set_epoch(epoch)
    return [list(ds), list(ds)]


def same_keys(got: list) -> bool:
    """Both passes hold every record once, in the same (seeded) order."""
    return got[0] == got[1] and sorted(got[0]) == RECS


def store(tmp: Path, fmt: str = "lmdb", name: str = "s", recs=RECS) -> Path:
    opts = {"shard_records": 5} if fmt == "tar" else {}
    storage.write(tmp / name, recs, fmt, **opts)
    return tmp / name


def npy(tmp: Path, n: int = 8) -> Path:
    arrays = [np.full((4, 4), i, np.uint8) for i in range(n)]
    return storage.write_memmap(tmp / "a.npy", arrays, n, (4, 4))


def damaged(tmp: Path, fmt: str = "lmdb") -> Path:
    s = store(tmp, fmt)
    payload = {"lmdb": "lmdb/data.mdb", "hdf5": "data.h5", "tar": "shard-00000.tar"}[fmt]
    data = bytearray((s / payload).read_bytes())
    data[len(data) // 3] ^= 0xFF
    (s / payload).write_bytes(bytes(data))
    return s


def read_replaced(tmp: Path, fmt: str) -> list:
    s = store(tmp, fmt)
    ds = storage.StoreDataset(s)
    got = [ds[0]]
    storage.write(s, [(k, v + b"!") for k, v in RECS], fmt, overwrite=True)
    return got + [ds[i] for i in range(1, len(ds))]


def read_back(p: Path) -> list:
    return list(storage.read_all(p))


def special(tmp: Path, fmt: str, make: Callable[[Path], Any], rel: str | None = None) -> Path:
    """A store whose payload file holding record 3 (or ``rel``) is replaced by ``make(path)``."""
    s = store(tmp, fmt)
    rel = rel or {"folder": RECS[3][0], "lmdb": "lmdb/data.mdb", "hdf5": "data.h5"}.get(
        fmt, "shard-00000.tar"
    )
    (s / rel).unlink()
    make(s / rel)
    return s


def syscalls() -> bool:
    with storage.read_syscalls() as calls:
        pass
    return calls.calls in (0, None)
