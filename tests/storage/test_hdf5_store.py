"""Tests of storage.hdf5_store: damage is a CorruptRecordError, never a raw h5py error."""

from __future__ import annotations

from collections import Counter

from tricks_helpers import storage
from tricks_helpers.storage.manifest import CorruptRecordError


def test_hdf5_damage_raises_corrupt_record_error_not_a_raw_error(tmp_path):
    recs = [(f"k{i}", bytes([i + 1]) * 300) for i in range(6)]
    storage.write(tmp_path / "s", recs, format="hdf5")
    payload = tmp_path / "s" / "data.h5"
    clean = payload.read_bytes()
    kinds = Counter()
    for pos in range(0, 2048, 29):  # the superblock and object headers
        data = bytearray(clean)
        data[pos] ^= 0x10
        payload.write_bytes(bytes(data))
        try:
            [storage.StoreDataset(tmp_path / "s")[i] for i in range(6)]
            kinds["ok"] += 1
        except CorruptRecordError:
            kinds["CorruptRecordError"] += 1
    assert set(kinds) <= {"ok", "CorruptRecordError"} and kinds["CorruptRecordError"] > 0
