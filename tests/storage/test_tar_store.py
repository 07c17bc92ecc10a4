"""Tests of storage.tar_store: standard tar shards, offsets checked, few files open."""

from __future__ import annotations

import json
import os
import tarfile

import numpy as np
import pytest

from tricks_helpers import storage
from tricks_helpers.storage import tar_store
from tricks_helpers.storage.manifest import CorruptRecordError, TruncatedStoreError

from .support import (
    edit_manifest,
    write_store,
)


def test_tar_shards_are_standard_tar_files(stores):
    recs, paths = stores
    shards = sorted(paths["tar"].glob("shard-*.tar"))
    assert len(shards) == -(-len(recs) // 100)
    seen = []
    for shard in shards:
        with tarfile.open(shard) as tar:
            for m in tar.getmembers():
                seen.append((m.pax_headers[tar_store.PAX_KEY], tar.extractfile(m).read()))
    assert seen == recs


def test_a_tar_offset_off_by_one_is_caught_even_with_a_valid_digest(tmp_path, thirty):
    write_store(tmp_path / "s", thirty, "tar")

    def shift(m):
        m["records"][5][4] += 1

    edit_manifest(tmp_path / "s", shift, redigest=False)
    with pytest.raises(CorruptRecordError, match="fails its digest"):
        storage.StoreDataset(tmp_path / "s")
    edit_manifest(tmp_path / "s", lambda m: None, redigest=True)  # a crafted manifest
    with pytest.raises(CorruptRecordError, match="record 5 'img/005' has a bad shard or offset"):
        storage.verify(tmp_path / "s")
    with pytest.raises(CorruptRecordError, match="record 5"):
        storage.StoreDataset(tmp_path / "s")


def test_a_tar_offset_off_by_a_block_is_caught_by_the_structure_check(tmp_path, thirty):
    write_store(tmp_path / "s", thirty, "tar")
    edit_manifest(
        tmp_path / "s",
        lambda m: m["records"][5].__setitem__(4, m["records"][5][4] + 512),
        redigest=True,
    )
    with pytest.raises(CorruptRecordError, match="record 5 'img/005'"):
        storage.verify(tmp_path / "s")
    with pytest.raises(CorruptRecordError, match="record 5 'img/005' fails its checksum"):
        storage.StoreDataset(tmp_path / "s")[5]


def test_malformed_tar_header_is_reported(tmp_path):
    storage.write(tmp_path / "s", [("a", b"1"), ("b", b"2")], format="tar")
    shard = tmp_path / "s" / "shard-00000.tar"
    data = bytearray(shard.read_bytes())
    data[100] ^= 0x01  # inside the first header's mode field: its checksum no longer matches
    shard.write_bytes(bytes(data))
    with pytest.raises(
        CorruptRecordError, match="record 0 'a' in shard 'shard-00000.tar': unreadable tar member"
    ):
        storage.verify(tmp_path / "s")
    assert list(storage.read_all(tmp_path / "s", check=False)) == [("a", b"1"), ("b", b"2")]


def test_tar_shard_truncated_mid_record(tmp_path):
    recs = [(f"k{i}", bytes([i]) * 3000) for i in range(40)]
    storage.write(tmp_path / "s", recs, format="tar", shard_records=10)
    shard = tmp_path / "s" / "shard-00002.tar"
    offset = json.loads((tmp_path / "s" / storage.MANIFEST).read_text())["records"][24][4]
    with open(shard, "r+b") as f:
        f.truncate(offset + 100)
    with pytest.raises(TruncatedStoreError, match=r"file 'shard-00002.tar' has .* record 24 'k24'"):
        storage.verify(tmp_path / "s")
    with pytest.raises(TruncatedStoreError, match="record 24 'k24' is truncated"):
        storage.StoreDataset(tmp_path / "s")[24]


def test_tar_reader_keeps_few_files_open(tmp_path):
    recs = [(f"k{i:03d}", bytes([i % 256]) * 10) for i in range(120)]
    storage.write(tmp_path / "s", recs, format="tar", shard_records=2)  # 60 shards
    fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    ds = storage.StoreDataset(tmp_path / "s")
    order = np.random.default_rng(0).permutation(len(recs))
    assert [ds[int(i)] for i in order] == [recs[int(i)] for i in order]
    assert len(ds._reader.get().files) <= tar_store.OPEN_SHARDS
    if fds is not None:
        # + 1: the store's directory, held open so the reader keeps its generation
        assert len(os.listdir("/proc/self/fd")) <= fds + tar_store.OPEN_SHARDS + 1
