"""Records and small edits shared by the storage tests (fixtures are in conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tricks_helpers import storage
from tricks_helpers.storage import manifest

FORMATS = storage.FORMATS
#: A value larger than one LMDB page, one tar block and one HDF5 chunk.
BIG = np.random.default_rng(0).integers(0, 256, size=3 * 2**20 + 17, dtype=np.uint8).tobytes()


def sample_records(n_tiny: int = 500) -> list[tuple[str, bytes]]:
    """An empty value, a 3 MiB value, non-ASCII keys and ``n_tiny`` values of 0-2 bytes."""
    recs = [
        ("empty/0", b""),
        ("big/blob.bin", BIG),
        ("ünï/cødé €🙂.jpg", "héllo".encode()),
        ("日本/画像.png", bytes(range(256))),
    ]
    recs += [(f"tiny/{i:05d}", bytes([i % 251]) * (i % 3)) for i in range(n_tiny)]
    return recs


def write_store(path: Path, recs, fmt: str, **kw):
    """``storage.write`` with 100 records per tar shard (so tar stores have several)."""
    opts = {"shard_records": 100} if fmt == "tar" else {}
    opts.update(kw)
    return storage.write(path, recs, format=fmt, **opts)


def collate_keys(batch):
    return [k for k, _ in batch]


def edit_manifest(root: Path, edit, *, redigest: bool) -> None:
    """Change a store's manifest; with ``redigest`` its digest is recomputed (a crafted one)."""
    m = json.loads((root / storage.MANIFEST).read_text(encoding="utf-8"))
    digest = m.pop("digest")
    edit(m)
    data = manifest.manifest_bytes(m) if redigest else manifest._canonical({**m, "digest": digest})
    (root / storage.MANIFEST).write_bytes(data)


def flip_value_byte(path: Path, value: bytes) -> None:
    """Flip one byte inside every copy of ``value`` in ``path``."""
    data = bytearray(path.read_bytes())
    at = data.find(value)
    assert at >= 0, "value not found in payload"
    while at >= 0:
        data[at + len(value) // 2] ^= 0xFF
        at = data.find(value, at + 1)
    path.write_bytes(bytes(data))


def payload_file(root: Path, fmt: str, key: str) -> Path:
    """The file holding record ``key`` of a store of format ``fmt``."""
    return {
        "folder": root / key,
        "lmdb": root / "lmdb" / "data.mdb",
        "tar": root / "shard-00000.tar",
        "hdf5": root / "data.h5",
    }[fmt]
