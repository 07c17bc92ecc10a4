"""Tests of storage.lmdb_store: map growth, shared environments, no stale handle.

Damaged LMDB files read in child processes are in test_reader_faults.py.
"""

from __future__ import annotations

import gc

from tricks_helpers import storage

from .support import (
    BIG,
)


def test_lmdb_grows_its_map_as_needed(tmp_path):
    recs = [(f"k{i}", BIG) for i in range(3)]
    storage.write(tmp_path / "s", recs, format="lmdb", map_size=1 << 20)
    assert list(storage.read_all(tmp_path / "s")) == recs


def test_no_stale_lmdb_handle_after_an_overwrite(tmp_path):
    storage.write(tmp_path / "p", [("a", b"OLD")], format="lmdb")
    kept = storage.StoreDataset(tmp_path / "p")
    assert kept[0] == ("a", b"OLD")
    storage.write(tmp_path / "p", [("a", b"NEW")], format="lmdb", overwrite=True)
    assert storage.StoreDataset(tmp_path / "p")[0] == ("a", b"NEW")
    assert storage.verify(tmp_path / "p").count == 1
    assert kept[0] == ("a", b"OLD")  # a dataset made before keeps reading what it was made on


def test_lmdb_environments_are_shared_and_released(tmp_path):
    from tricks_helpers.storage import lmdb_store

    storage.write(tmp_path / "p", [("a", b"1")], format="lmdb")
    before = len(lmdb_store._ENVS)
    a, b = storage.StoreDataset(tmp_path / "p"), storage.StoreDataset(tmp_path / "p")
    assert a[0] == b[0] and len(lmdb_store._ENVS) == before + 1
    del a, b

    gc.collect()
    assert len(lmdb_store._ENVS) == before
