"""Tests of tricks_helpers.storage: round trips, corruption, truncation, atomic writes, workers."""

from __future__ import annotations

import json
import os
import pickle
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tricks_helpers import storage
from tricks_helpers.storage import (CorruptRecordError, StorageError, TruncatedStoreError)

FORMATS = storage.FORMATS
BIG = np.random.default_rng(0).integers(0, 256, size=3 * 2**20 + 17, dtype=np.uint8).tobytes()


def _records(n_tiny: int = 500) -> list[tuple[str, bytes]]:
    recs = [("empty/0", b""), ("big/blob.bin", BIG), ("ünï/cødé €🙂.jpg", "héllo".encode()),
            ("日本/画像.png", bytes(range(256)))]
    recs += [(f"tiny/{i:05d}", bytes([i % 251]) * (i % 3)) for i in range(n_tiny)]
    return recs


def _write(path: Path, recs, fmt: str, **kw):
    opts = {"shard_records": 100} if fmt == "tar" else {}
    opts.update(kw)
    return storage.write(path, recs, format=fmt, **opts)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """One store per format holding the same records (written once for the module)."""
    root = tmp_path_factory.mktemp("stores")
    recs = _records()
    return recs, {fmt: (_write(root / fmt, recs, fmt), root / fmt)[1] for fmt in FORMATS}


def _collate_keys(batch):
    return [k for k, _ in batch]


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_record_byte_for_byte(stores, fmt):
    recs, paths = stores
    assert list(storage.read_all(paths[fmt])) == recs
    inf = storage.verify(paths[fmt])
    assert (inf.format, inf.count, inf.total_bytes) == (fmt, len(recs), sum(len(v) for _, v in recs))
    ds = storage.StoreDataset(paths[fmt])
    assert len(ds) == len(recs)
    for i in (0, 1, 2, 3, len(recs) - 1, -1):
        assert ds[i] == recs[i]
    assert list(storage.StoreIterableDataset(paths[fmt])) == recs
    assert storage.info(paths[fmt]) == inf


@pytest.mark.parametrize("fmt", ["lmdb", "tar", "hdf5"])
def test_non_folder_formats_accept_any_key(tmp_path, fmt):
    recs = [("../../etc/passwd", b"x"), ("/abs", b"y"), ("a\\b", b""), (storage.MANIFEST, b"z"),
            ("a", b"1"), ("a/b", b"2"), ("line\nbreak=x\r\u2028\x85", b"3"), ("k" * 2000, b"4")]
    _write(tmp_path / "s", recs, fmt)
    assert list(storage.read_all(tmp_path / "s")) == recs


def test_folder_keeps_class_folders_as_users_do(stores):
    _, paths = stores
    root = paths["folder"]
    assert (root / "big" / "blob.bin").read_bytes() == BIG
    assert (root / "ünï" / "cødé €🙂.jpg").read_bytes() == "héllo".encode()
    assert (root / storage.MANIFEST).is_file()


def test_tar_shards_are_standard_tar_files(stores):
    recs, paths = stores
    shards = sorted(paths["tar"].glob("shard-*.tar"))
    assert len(shards) == -(-len(recs) // 100)
    seen = []
    for shard in shards:
        with tarfile.open(shard) as tar:
            for m in tar.getmembers():
                seen.append((m.pax_headers["TRICKS.key"], tar.extractfile(m).read()))
    assert seen == recs


def test_malformed_tar_header_is_reported(tmp_path):
    storage.write(tmp_path / "s", [("a", b"1"), ("b", b"2")], format="tar")
    shard = tmp_path / "s" / "shard-00000.tar"
    data = bytearray(shard.read_bytes())
    data[100] ^= 0x01  # inside the first header's mode field: its checksum no longer matches
    shard.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError, match="record 0 'a' in shard 'shard-00000.tar': tar "
                                                 "header checksum mismatch"):
        list(storage.read_all(tmp_path / "s"))
    assert storage._parse_pax(b"12 k=v\n") is None  # length does not match the record
    assert storage._parse_pax(b"6 k=v\n") == {"k": "v"}


def test_lmdb_grows_its_map_as_needed(tmp_path):
    recs = [(f"k{i}", BIG) for i in range(3)]
    storage.write(tmp_path / "s", recs, format="lmdb", map_size=1 << 20)
    assert list(storage.read_all(tmp_path / "s")) == recs


def test_values_may_be_bytearray_or_memoryview(tmp_path):
    storage.write(tmp_path / "s", [("a", bytearray(b"ab")), ("b", memoryview(b"cd"))], format="hdf5")
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"ab"), ("b", b"cd")]


def test_empty_store_round_trips(tmp_path):
    for fmt in FORMATS:
        assert storage.write(tmp_path / fmt, [], format=fmt).count == 0
        assert list(storage.read_all(tmp_path / fmt)) == []


# ----------------------------------------------------------------------------- input errors


@pytest.mark.parametrize("key, why", [
    ("../evil", "'..'"), ("a/../b", "'..'"), ("/etc/x", "absolute"), ("a//b", "empty"),
    ("a/./b", "'.'"), ("a\\b", "backslash"), ("dir/", "empty"), (storage.MANIFEST, "manifest"),
    ("x" * 256, "255 bytes"),
])
def test_folder_refuses_unsafe_keys(tmp_path, key, why):
    with pytest.raises(ValueError, match=f"not safe as a file name.*{why}"):
        storage.write(tmp_path / "s", [("ok", b"1"), (key, b"2")], format="folder")
    assert not (tmp_path / "s").exists()
    assert list(tmp_path.iterdir()) == []


def test_folder_refuses_file_folder_clash(tmp_path):
    with pytest.raises(ValueError, match="clashes"):
        storage.write(tmp_path / "s", [("a", b"1"), ("a/b", b"2")], format="folder")
    with pytest.raises(ValueError, match="clashes"):
        storage.write(tmp_path / "t", [("a/b", b"1"), ("a", b"2")], format="folder")


@pytest.mark.parametrize("recs, exc, match", [
    ([("a", b"1"), ("a", b"2")], ValueError, "record 1: duplicate key 'a'"),
    ([(3, b"1")], TypeError, "key must be a str"),
    ([("", b"1")], ValueError, "empty key"),
    ([("a\x00b", b"1")], ValueError, "NUL"),
    ([("\ud800", b"1")], ValueError, "not valid UTF-8"),
    ([("a", "text")], TypeError, "value must be bytes"),
    ([("a", b"1", "extra")], TypeError, "expected a \\(key, value\\) pair"),
])
def test_bad_records_are_refused(tmp_path, recs, exc, match):
    with pytest.raises(exc, match=match):
        storage.write(tmp_path / "s", recs, format="lmdb")
    assert not (tmp_path / "s").exists()


def test_bad_format_and_options(tmp_path):
    with pytest.raises(ValueError, match="unknown format 'zip'"):
        storage.write(tmp_path / "s", [], format="zip")
    with pytest.raises(ValueError, match="do not apply to format 'hdf5'"):
        storage.write(tmp_path / "s", [], format="hdf5", shard_records=3)
    with pytest.raises(ValueError, match="shard_records must be an integer >= 1"):
        storage.write(tmp_path / "s", [("a", b"")], format="tar", shard_records=0)
    with pytest.raises(StorageError, match="parent folder"):
        storage.write(tmp_path / "missing" / "s", [], format="tar")


# ----------------------------------------------------------------------------- atomic writes


def test_refuses_to_overwrite_unless_asked(tmp_path):
    storage.write(tmp_path / "s", [("a", b"old")], format="tar")
    with pytest.raises(FileExistsError, match="'s' already exists; pass overwrite=True"):
        storage.write(tmp_path / "s", [("a", b"new")], format="tar")
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"old")]
    storage.write(tmp_path / "s", [("b", b"new")], format="hdf5", overwrite=True)
    assert list(storage.read_all(tmp_path / "s")) == [("b", b"new")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_overwrite_never_deletes_a_foreign_directory(tmp_path):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "precious.jpg").write_bytes(b"keep me")
    with pytest.raises(StorageError, match="not a store written by"):
        storage.write(foreign, [("a", b"1")], format="folder", overwrite=True)
    assert (foreign / "precious.jpg").read_bytes() == b"keep me"


@pytest.mark.parametrize("fmt", FORMATS)
def test_interrupted_write_leaves_no_file_under_the_final_name(tmp_path, fmt):
    def records():
        for i in range(150):
            yield f"r/{i}", b"x" * 1000
        raise RuntimeError("source failed mid-way")

    with pytest.raises(RuntimeError, match="mid-way"):
        _write(tmp_path / "s", records(), fmt)
    assert list(tmp_path.iterdir()) == []  # neither the store nor its temporary directory


def test_failed_overwrite_keeps_the_old_store(tmp_path):
    storage.write(tmp_path / "s", [("a", b"old")], format="lmdb")

    def records():
        yield "a", b"new"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        storage.write(tmp_path / "s", records(), format="lmdb", overwrite=True)
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"old")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_progress_bar_only_when_asked(tmp_path, capsys):
    storage.write(tmp_path / "quiet", [("a", b"1")], format="tar")
    assert capsys.readouterr().err == ""
    storage.write(tmp_path / "loud", [("a", b"1")], format="tar", progress=True)
    assert "write tar" in capsys.readouterr().err


# ----------------------------------------------------------------------------- corruption


def _flip_payload_byte(path: Path, needle: bytes) -> None:
    """Flip one byte inside every copy of ``needle`` in ``path`` (LMDB may keep stale pages)."""
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at >= 0, "needle not found in payload"
    while at >= 0:
        data[at + len(needle) // 2] ^= 0xFF
        at = data.find(needle, at + 1)
    path.write_bytes(bytes(data))


def _payload_file(root: Path, fmt: str, key: str) -> Path:
    return {"folder": root / key, "lmdb": root / "lmdb" / "data.mdb",
            "tar": root / "shard-00000.tar", "hdf5": root / "data.h5"}[fmt]


@pytest.mark.parametrize("fmt", FORMATS)
def test_verify_names_the_first_corrupt_record(tmp_path, fmt):
    rng = np.random.default_rng(1)
    recs = [(f"img/{i:03d}", rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()) for i in range(30)]
    _write(tmp_path / "s", recs, fmt)
    _flip_payload_byte(_payload_file(tmp_path / "s", fmt, recs[7][0]), recs[7][1][:64])
    with pytest.raises(CorruptRecordError, match=r"record 7 'img/007' fails its checksum") as err:
        storage.verify(tmp_path / "s")
    assert (err.value.index, err.value.key) == (7, "img/007")
    with pytest.raises(CorruptRecordError, match="record 7"):
        list(storage.read_all(tmp_path / "s"))
    assert storage.StoreDataset(tmp_path / "s")[6] == recs[6]  # other records still readable
    with pytest.raises(CorruptRecordError, match="record 7"):
        storage.StoreDataset(tmp_path / "s", check=True)[7]


def test_tar_shard_truncated_mid_record(tmp_path):
    recs = [(f"k{i}", bytes([i]) * 3000) for i in range(40)]
    storage.write(tmp_path / "s", recs, format="tar", shard_records=10)
    shard = tmp_path / "s" / "shard-00002.tar"
    offset = json.loads((tmp_path / "s" / storage.MANIFEST).read_text())["records"][24][4]
    with open(shard, "r+b") as f:
        f.truncate(offset + 100)
    with pytest.raises(TruncatedStoreError, match=r"file 'shard-00002.tar' has .* record 24 'k24'"):
        storage.verify(tmp_path / "s")
    # a reader that streams without the size check still stops at the right record
    reader = storage._open(tmp_path / "s")
    with pytest.raises(TruncatedStoreError, match=r"record 24 'k24' in shard 'shard-00002.tar'.*"
                                                  r"truncated"):
        list(reader.stream(2))
    with pytest.raises(TruncatedStoreError, match="record 24 'k24' is truncated"):
        reader.get(24)


@pytest.mark.parametrize("fmt", ["lmdb", "hdf5"])
def test_truncated_single_file_formats_fail_cleanly(tmp_path, fmt):
    recs = [(f"k{i}", bytes([i]) * 5000) for i in range(50)]
    storage.write(tmp_path / "s", recs, format=fmt)
    payload = _payload_file(tmp_path / "s", fmt, "")
    with open(payload, "r+b") as f:
        f.truncate(payload.stat().st_size // 2)
    with pytest.raises(TruncatedStoreError, match=r"has \d+ bytes, expected \d+; first affected "
                                                  r"record 0 'k0'"):
        storage.verify(tmp_path / "s")
    with pytest.raises(TruncatedStoreError):
        storage.StoreDataset(tmp_path / "s")[3]  # never maps a short file (SIGBUS)


def test_folder_missing_and_truncated_files(tmp_path):
    recs = [(f"c/{i}", b"abc" * 10) for i in range(5)]
    storage.write(tmp_path / "s", recs, format="folder")
    (tmp_path / "s" / "c" / "3").write_bytes(b"abc")
    with pytest.raises(TruncatedStoreError, match=r"file 'c/3' has 3 bytes, expected 30; first "
                                                  r"affected record 3 'c/3'"):
        storage.verify(tmp_path / "s")
    (tmp_path / "s" / "c" / "3").unlink()
    with pytest.raises(TruncatedStoreError, match="file 'c/3' is missing"):
        storage.verify(tmp_path / "s")
    with pytest.raises(TruncatedStoreError, match="record 3 'c/3' is missing"):
        storage.StoreDataset(tmp_path / "s")[3]


def test_not_a_store_and_broken_manifest(tmp_path):
    with pytest.raises(StorageError, match="no store at 'nothing'"):
        storage.verify(tmp_path / "nothing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(StorageError, match="not a store written by"):
        list(storage.read_all(tmp_path / "plain"))
    storage.write(tmp_path / "s", [("a", b"1")], format="hdf5")
    m = tmp_path / "s" / storage.MANIFEST
    m.write_text(m.read_text()[:-20])
    with pytest.raises(StorageError, match="manifest _store.json is unreadable"):
        storage.StoreDataset(tmp_path / "s")
    m.write_text(json.dumps({"version": 1, "format": "hdf5", "count": 2, "records": []}))
    with pytest.raises(StorageError, match="says 2 records but lists 0"):
        storage.info(tmp_path / "s")
    m.write_text(json.dumps({"version": 99, "format": "hdf5", "count": 0, "records": []}))
    with pytest.raises(StorageError, match="unsupported manifest"):
        storage.info(tmp_path / "s")


def test_error_messages_never_show_the_full_path(tmp_path):
    storage.write(tmp_path / "s", [("a", b"1")], format="tar")
    with pytest.raises(FileExistsError) as err:
        storage.write(tmp_path / "s", [], format="tar")
    assert str(tmp_path) not in str(err.value)


# ----------------------------------------------------------------------------- workers


@pytest.mark.parametrize("fmt", FORMATS)
def test_map_dataset_with_two_workers_loses_and_repeats_nothing(stores, fmt):
    recs, paths = stores
    ds = storage.StoreDataset(paths[fmt])
    assert ds[0] == recs[0] and ds.handle_open  # parent opened a handle before the fork...
    loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, collate_fn=lambda b: b,
                        generator=torch.Generator().manual_seed(0))
    got = [item for batch in loader for item in batch]  # ...workers open their own
    assert Counter(k for k, _ in got) == Counter(k for k, _ in recs)
    assert dict(got) == dict(recs)


def test_each_worker_opens_its_own_handle(stores):
    _, paths = stores
    ds = storage.StoreDataset(paths["lmdb"], transform=lambda k, v: (k, os.getpid()))
    ds[0]
    parent_reader = ds._lazy._reader
    loader = DataLoader(ds, batch_size=50, num_workers=2, collate_fn=lambda b: b)
    pids = {pid for batch in loader for _, pid in batch}
    assert len(pids) == 2 and os.getpid() not in pids
    assert ds._lazy._reader is parent_reader  # the parent's handle was neither used nor replaced
    assert pickle.loads(pickle.dumps(ds._lazy))._reader is None  # handles are never pickled


@pytest.mark.parametrize("fmt, shard_records", [("tar", 100), ("tar", 10_000), ("lmdb", None),
                                                ("hdf5", None), ("folder", None)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_iterable_dataset_splits_workers_without_loss_or_repeat(tmp_path, fmt, shard_records, shuffle):
    recs = [(f"k{i:04d}", i.to_bytes(2, "big")) for i in range(537)]
    opts = {"shard_records": shard_records} if shard_records else {}
    storage.write(tmp_path / "s", recs, format=fmt, **opts)
    ds = storage.StoreIterableDataset(tmp_path / "s", shuffle=shuffle, shuffle_buffer=50, seed=3)
    loader = DataLoader(ds, batch_size=32, num_workers=2, collate_fn=_collate_keys)
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


def test_iterable_dataset_argument_errors(stores):
    _, paths = stores
    with pytest.raises(ValueError, match="shuffle_buffer must be an integer >= 1"):
        storage.StoreIterableDataset(paths["tar"], shuffle_buffer=0)
    with pytest.raises(ValueError, match="seed must be an integer"):
        storage.StoreIterableDataset(paths["tar"], seed=-1)
    with pytest.raises(IndexError, match="out of range"):
        storage.StoreDataset(paths["tar"])[10**6]


# ----------------------------------------------------------------------------- caches


def test_in_memory_store(stores):
    recs, paths = stores
    mem = storage.InMemoryStore(paths["lmdb"])
    assert len(mem) == len(recs) and mem.nbytes == sum(len(v) for _, v in recs)
    assert [mem[i] for i in range(len(mem))] == recs
    loader = DataLoader(mem, batch_size=64, num_workers=2, collate_fn=_collate_keys)
    assert Counter(k for b in loader for k in b) == Counter(k for k, _ in recs)
    with pytest.raises(IndexError, match="out of range"):
        mem[len(mem)]


def test_memmap_round_trip_and_workers(tmp_path):
    rng = np.random.default_rng(0)
    arrays = rng.integers(0, 256, size=(20, 4, 5, 3), dtype=np.uint8)
    path = storage.write_memmap(tmp_path / "x.npy", iter(arrays), count=20, shape=(4, 5, 3))
    assert np.array_equal(np.load(path), arrays)
    ds = storage.MemmapDataset(path, labels=range(20))
    x, y = ds[5]
    assert x.dtype == torch.uint8 and torch.equal(x, torch.from_numpy(arrays[5])) and y == 5
    x += 1  # a writable copy, not a view of the read-only map
    assert np.array_equal(np.load(path)[5], arrays[5])
    loader = DataLoader(ds, batch_size=3, shuffle=True, num_workers=2)
    ys = torch.cat([yb for _, yb in loader])
    assert sorted(ys.tolist()) == list(range(20))


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
    with pytest.raises(ValueError, match="count must be an integer"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=0, shape=(2, 2))
    with pytest.raises(ValueError, match="shape must be positive"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=(2, 0))
    assert list(tmp_path.iterdir()) == []
    storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=(2, 2))
    with pytest.raises(FileExistsError, match="already exists"):
        storage.write_memmap(tmp_path / "x.npy", [a], count=1, shape=(2, 2))
    with pytest.raises(ValueError, match="2 labels for 1 arrays"):
        storage.MemmapDataset(tmp_path / "x.npy", labels=[0, 1])
    np.save(tmp_path / "f.npy", np.zeros((3, 3), np.float32))
    with pytest.raises(StorageError, match="expected uint8"):
        storage.MemmapDataset(tmp_path / "f.npy")
    (tmp_path / "bad.npy").write_bytes(b"junk")
    with pytest.raises(StorageError, match="cannot read 'bad.npy'"):
        storage.MemmapDataset(tmp_path / "bad.npy")
