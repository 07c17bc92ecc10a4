"""Tests of storage.arrays: the RAM cache and pre-decoded memmap arrays."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tricks_helpers import storage
from tricks_helpers.storage.manifest import StorageError

from .support import (
    collate_keys,
)


def test_in_memory_store(stores):
    recs, paths = stores
    mem = storage.InMemoryStore(paths["lmdb"])
    assert len(mem) == len(recs) and mem.nbytes == sum(len(v) for _, v in recs)
    assert [mem[i] for i in range(len(mem))] == recs
    loader = DataLoader(mem, batch_size=64, num_workers=2, collate_fn=collate_keys)
    assert Counter(k for b in loader for k in b) == Counter(k for k, _ in recs)
    with pytest.raises(IndexError, match="out of range"):
        mem[len(mem)]
    with pytest.raises(TypeError, match="InMemoryStore: transform must be callable"):
        storage.InMemoryStore(paths["lmdb"], transform="x")


def test_memmap_round_trip_and_workers(tmp_path):
    rng = np.random.default_rng(0)
    arrays = rng.integers(0, 256, size=(20, 4, 5, 3), dtype=np.uint8)
    path = storage.write_memmap(tmp_path / "x.npy", iter(arrays), count=20, shape=(4, 5, 3))
    assert np.array_equal(np.load(path), arrays)
    ds = storage.MemmapDataset(path, labels=range(20))
    x, y = ds[np.int64(5)]
    assert x.dtype == torch.uint8 and torch.equal(x, torch.from_numpy(arrays[5])) and y == 5
    x += 1  # a writable copy, not a view of the read-only map
    assert np.array_equal(np.load(path)[5], arrays[5])
    loader = DataLoader(ds, batch_size=3, shuffle=True, num_workers=2)
    ys = torch.cat([yb for _, yb in loader])
    assert sorted(ys.tolist()) == list(range(20))
    with pytest.raises(IndexError, match="index 20 out of range"):
        ds[20]
    storage.write_memmap(path, iter(arrays[:2]), count=2, shape=(4, 5, 3), overwrite=True)
    assert np.array_equal(np.load(path), arrays[:2])


def test_memmap_errors_leave_no_file(tmp_path):
    a = np.zeros((2, 2), np.uint8)
    with pytest.raises(ValueError, match="got 1 arrays, expected count=2"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=2, shape=(2, 2))
    with pytest.raises(ValueError, match=r"array 1 is float64 \(2, 2\), expected uint8"):
        storage.write_memmap(tmp_path / "x.npy", [a, a.astype(float)], count=2, shape=(2, 2))
    with pytest.raises(ValueError, match="more than count=1"):
        storage.write_memmap(tmp_path / "x.npy", [a, a], count=1, shape=(2, 2))
    with pytest.raises(ValueError, match="must end in .npy"):
        storage.write_memmap(tmp_path / "x.bin", [a], count=1, shape=(2, 2))
    with pytest.raises(ValueError, match="count must be an integer >= 1"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=0, shape=(2, 2))
    with pytest.raises(TypeError, match="count must be an integer"):
        storage.write_memmap(tmp_path / "x.npy", [a], count="1", shape=(2, 2))
    with pytest.raises(ValueError, match="shape must be positive"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=(2, 0))
    assert list(tmp_path.iterdir()) == []
    storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=(2, 2))
    with pytest.raises(FileExistsError, match="already exists"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=(2, 2))
    with pytest.raises(ValueError, match="2 labels for 1 arrays"):
        storage.MemmapDataset(tmp_path / "x.npy", labels=[0, 1])
    np.save(tmp_path / "f.npy", np.zeros((3, 3), np.float32))
    with pytest.raises(StorageError, match=r"uint8 rows .*\(holds float32 of shape \(3, 3\)\)"):
        storage.MemmapDataset(tmp_path / "f.npy")
    (tmp_path / "bad.npy").write_bytes(b"junk")
    with pytest.raises(StorageError, match="cannot read 'bad.npy'"):
        storage.MemmapDataset(tmp_path / "bad.npy")


@pytest.mark.parametrize(
    "labels, exc, match",
    [
        ("abcd", TypeError, "labels must be a 1-D sequence of integers.*got str"),
        (4, TypeError, "labels must be a 1-D sequence of integers.*got int"),
        ([float("nan")] * 4, TypeError, "got float64 values"),
        ([None] * 4, TypeError, "got object values"),
        (np.zeros((4, 2), np.int64), ValueError, r"got shape \(4, 2\)"),
        (np.full(4, 2**63, np.uint64), ValueError, "does not fit in int64"),
        ([0, 1], ValueError, "2 labels for 4 arrays"),
        ([], ValueError, "0 labels for 4 arrays"),
    ],
)
def test_memmap_labels_are_one_integer_per_array(tmp_path, labels, exc, match):
    path = storage.write_memmap(tmp_path / "x.npy", [np.zeros((2, 2), np.uint8)] * 4, 4, (2, 2))
    with pytest.raises(exc, match=f"MemmapDataset: .*{match}"):
        storage.MemmapDataset(path, labels=labels)
    for ok in (
        range(4),
        np.arange(4, dtype=np.uint8),
        torch.arange(4),
        [np.int64(i) for i in range(4)],
    ):
        ds = storage.MemmapDataset(path, labels=ok)
        assert [int(ds[i][1]) for i in range(4)] == [0, 1, 2, 3]
        assert ds[3][1].dtype == torch.int64 and ds[3][1].shape == ()


def test_write_memmap_names_a_wrong_shape_or_arrays_argument(tmp_path):
    a = np.zeros((2, 2), np.uint8)
    with pytest.raises(TypeError, match="write_memmap: shape must be tuple or list, got NoneType"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=None)
    with pytest.raises(TypeError, match="write_memmap: shape must be tuple or list, got int"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=2)
    with pytest.raises(TypeError, match="write_memmap: arrays must be an iterable of uint8 arrays"):
        storage.write_memmap(tmp_path / "x.npy", None, count=1, shape=(2, 2))
    assert list(tmp_path.iterdir()) == []
    assert np.array_equal(np.load(storage.write_memmap(tmp_path / "x.npy", [a], 1, [2, 2])), [a])
