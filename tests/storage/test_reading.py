"""Tests of storage.reading: verify and read_all catch damage; read syscalls counted."""

from __future__ import annotations

import os

import pytest

from tricks_helpers import storage
from tricks_helpers.storage.manifest import CorruptRecordError, TruncatedStoreError

from .support import (
    FORMATS,
    flip_value_byte,
    payload_file,
    write_store,
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_flipped_value_byte_is_caught(tmp_path, thirty, fmt):
    recs = thirty
    write_store(tmp_path / "s", recs, fmt)
    flip_value_byte(payload_file(tmp_path / "s", fmt, recs[7][0]), recs[7][1][:64])
    if fmt in ("folder", "tar"):  # plain reads: verify names the record
        match, where = r"record 7 'img/007' fails its checksum", (7, "img/007")
    else:  # LMDB/HDF5 never parse a file that fails its checksum: verify names the file
        match, where = r"file '(lmdb/data.mdb|data.h5)' fails its checksum", (None, None)
    with pytest.raises(CorruptRecordError, match=match) as err:
        storage.verify(tmp_path / "s")
    assert (err.value.index, err.value.key) == where
    with pytest.raises(CorruptRecordError, match=match):
        list(storage.read_all(tmp_path / "s"))
    if fmt == "lmdb":  # a 2000-byte value lives in a leaf page: LMDB would parse the damage
        for check in (True, False):
            with pytest.raises(CorruptRecordError, match="has a damaged LMDB tree"):
                storage.StoreDataset(tmp_path / "s", check=check)[6]
        return
    assert storage.StoreDataset(tmp_path / "s")[6] == recs[6]  # other records still readable
    # the datasets check every value by default (one SHA-256 per read) ...
    with pytest.raises(CorruptRecordError, match="record 7 'img/007' fails its checksum"):
        storage.StoreDataset(tmp_path / "s")[7]
    with pytest.raises(CorruptRecordError, match="record 7"):
        list(storage.StoreIterableDataset(tmp_path / "s"))
    # ... and check=False (documented) hands out the damaged bytes
    key, value = storage.StoreDataset(tmp_path / "s", check=False)[7]
    assert key == "img/007" and len(value) == 2000 and value != recs[7][1]


@pytest.mark.parametrize("fmt", ["lmdb", "hdf5"])
def test_truncated_single_file_formats_fail_cleanly(tmp_path, fmt):
    recs = [(f"k{i}", bytes([i]) * 5000) for i in range(50)]
    storage.write(tmp_path / "s", recs, format=fmt)
    payload = payload_file(tmp_path / "s", fmt, "")
    with open(payload, "r+b") as f:
        f.truncate(payload.stat().st_size // 2)
    with pytest.raises(
        TruncatedStoreError,
        match=r"has \d+ bytes, expected \d+; first affected "
        r"record 0 'k0'",
    ):
        storage.verify(tmp_path / "s")
    with pytest.raises(TruncatedStoreError):
        list(storage.read_all(tmp_path / "s", check=False))  # never maps a short file (SIGBUS)


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/io"), reason="Linux I/O accounting")
def test_read_syscalls_see_file_reads_but_not_memory_maps(stores):
    recs, paths = stores
    total = sum(len(v) for _, v in recs)
    counted = {}
    for fmt in ("folder", "lmdb"):
        ds = storage.StoreDataset(paths[fmt], check=False)
        with storage.read_syscalls() as reads:
            assert sum(len(ds[i][1]) for i in range(len(ds))) == total
        counted[fmt] = reads
    assert counted["folder"].calls >= len(recs) and counted["folder"].bytes == total
    # LMDB: its tree pages are read once (checked before LMDB opens the file), values never
    assert counted["lmdb"].calls <= 20 and counted["lmdb"].bytes < total // 10
    with storage.read_syscalls() as nothing:
        pass
    assert (nothing.available, nothing.calls, nothing.bytes) == (True, 0, 0)
