"""Tests of storage.datasets: argument errors, DataLoader workers without loss or repeat."""

from __future__ import annotations

import os
import pickle
from collections import Counter

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tricks_helpers import storage

from .support import (
    FORMATS,
    collate_keys,
)


def test_dataset_argument_errors(stores):
    _, paths = stores
    with pytest.raises(TypeError, match="StoreDataset: transform must be callable"):
        storage.StoreDataset(paths["tar"], transform=3)
    with pytest.raises(TypeError, match="StoreDataset: check must be True or False"):
        storage.StoreDataset(paths["tar"], check="no")
    with pytest.raises(ValueError, match="shuffle_buffer must be an integer >= 1"):
        storage.StoreIterableDataset(paths["tar"], shuffle_buffer=0)
    with pytest.raises(TypeError, match="shuffle_buffer must be an integer"):
        storage.StoreIterableDataset(paths["tar"], shuffle_buffer="8")
    with pytest.raises(ValueError, match="seed must be an integer in"):
        storage.StoreIterableDataset(paths["tar"], seed=-1)
    with pytest.raises(TypeError, match="shuffle must be True or False"):
        storage.StoreIterableDataset(paths["tar"], shuffle=1)
    ds = storage.StoreIterableDataset(paths["tar"])
    with pytest.raises(ValueError, match="set_epoch: epoch must be an integer >= 0"):
        ds.set_epoch(-1)
    with pytest.raises(TypeError, match="set_epoch: epoch must be an integer"):
        ds.set_epoch(1.5)
    ds.set_epoch(np.int64(2))
    assert ds.epoch == 2 and type(ds.epoch) is int
    ds = storage.StoreDataset(paths["lmdb"])
    with pytest.raises(IndexError, match="index 1000000 out of range"):
        ds[10**6]
    with pytest.raises(TypeError, match="StoreDataset: index must be an integer"):
        ds["3"]
    with pytest.raises(TypeError, match="StoreDataset: index must be an integer"):
        ds[1.0]


def test_iterable_dataset_groups_shards_once_per_iteration(stores, monkeypatch):
    _, paths = stores
    ds = storage.StoreIterableDataset(paths["tar"])
    calls = []
    original = ds.store.shard_members
    monkeypatch.setattr(ds.store, "shard_members", lambda: calls.append(1) or original())
    assert len(list(ds)) == len(ds)
    assert calls == [1]


@pytest.mark.parametrize("fmt", FORMATS)
def test_map_dataset_with_two_workers_loses_and_repeats_nothing(stores, fmt):
    recs, paths = stores
    ds = storage.StoreDataset(paths[fmt])
    assert ds[0] == recs[0] and ds.handle_open  # parent opened a handle before the fork...
    loader = DataLoader(
        ds,
        batch_size=16,
        shuffle=True,
        num_workers=2,
        collate_fn=lambda b: b,
        generator=torch.Generator().manual_seed(0),
    )
    got = [item for batch in loader for item in batch]  # ...workers open their own
    assert Counter(k for k, _ in got) == Counter(k for k, _ in recs)
    assert dict(got) == dict(recs)


def test_each_worker_opens_its_own_handle(stores):
    _, paths = stores
    ds = storage.StoreDataset(paths["lmdb"], transform=lambda k, v: (k, os.getpid()))
    ds[0]
    parent_reader = ds._reader.get()
    loader = DataLoader(ds, batch_size=50, num_workers=2, collate_fn=lambda b: b)
    pids = {pid for batch in loader for _, pid in batch}
    assert len(pids) == 2 and os.getpid() not in pids
    assert ds._reader.get() is parent_reader  # the parent's handle was neither used nor replaced
    copy = pickle.loads(pickle.dumps(storage.StoreDataset(paths["lmdb"])))
    assert not copy.handle_open  # handles are never pickled


@pytest.mark.parametrize(
    "fmt, shard_records",
    [("tar", 100), ("tar", 10_000), ("lmdb", None), ("hdf5", None), ("folder", None)],
)
@pytest.mark.parametrize("shuffle", [False, True])
def test_iterable_dataset_splits_workers_without_loss_or_repeat(
    tmp_path, fmt, shard_records, shuffle
):
    recs = [(f"k{i:04d}", i.to_bytes(2, "big")) for i in range(537)]
    opts = {"shard_records": shard_records} if shard_records else {}
    storage.write(tmp_path / "s", recs, format=fmt, **opts)
    ds = storage.StoreIterableDataset(tmp_path / "s", shuffle=shuffle, shuffle_buffer=50, seed=3)
    loader = DataLoader(ds, batch_size=32, num_workers=2, collate_fn=collate_keys)
    batches = list(loader)
    keys = [k for batch in batches for k in batch]
    assert Counter(keys) == Counter(k for k, _ in recs)
    assert all(b == sorted(b) for b in batches) == (not shuffle)


def test_iterable_shuffle_is_seeded_and_changes_with_epoch(stores):
    _, paths = stores
    ds = storage.StoreIterableDataset(paths["tar"], shuffle=True, shuffle_buffer=64, seed=7)
    first = [k for k, _ in ds]
    assert [k for k, _ in ds] == first
    ds.set_epoch(1)
    second = [k for k, _ in ds]
    assert second != first and sorted(second) == sorted(first)
