"""Tests of tricks_helpers.storage: round trips, input errors, corruption, datasets, workers.

Faults that need a separate process (SIGKILL, a full disk, crash detection) are in
test_storage_faults.py.
"""

from __future__ import annotations

import json
import os
import pickle
import tarfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tricks_helpers import storage
from tricks_helpers.storage import manifest as mf
from tricks_helpers.storage import tar_store
from tricks_helpers.storage.manifest import CorruptRecordError, StorageError, TruncatedStoreError

FORMATS = storage.FORMATS
BIG = np.random.default_rng(0).integers(0, 256, size=3 * 2**20 + 17, dtype=np.uint8).tobytes()


def _records(n_tiny: int = 500) -> list[tuple[str, bytes]]:
    recs = [
        ("empty/0", b""),
        ("big/blob.bin", BIG),
        ("ünï/cødé €🙂.jpg", "héllo".encode()),
        ("日本/画像.png", bytes(range(256))),
    ]
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


def _edit_manifest(root: Path, edit, *, redigest: bool) -> None:
    """Change a store's manifest; with ``redigest`` its digest is recomputed (a crafted one)."""
    m = json.loads((root / storage.MANIFEST).read_text(encoding="utf-8"))
    digest = m.pop("digest")
    edit(m)
    data = mf.manifest_bytes(m) if redigest else mf._canonical({**m, "digest": digest})
    (root / storage.MANIFEST).write_bytes(data)


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_record_byte_for_byte(stores, fmt):
    recs, paths = stores
    assert list(storage.read_all(paths[fmt])) == recs
    inf = storage.verify(paths[fmt])
    total = sum(len(v) for _, v in recs)
    assert (inf.format, inf.count, inf.total_bytes) == (fmt, len(recs), total)
    ds = storage.StoreDataset(paths[fmt])
    assert len(ds) == len(recs)
    for i in (0, 1, 2, 3, len(recs) - 1, -1, np.int64(2), torch.tensor(3).item()):
        assert ds[i] == recs[i]
    assert list(storage.StoreIterableDataset(paths[fmt])) == recs
    assert storage.info(paths[fmt]) == inf
    assert str(inf) == f"{fmt}: {fmt}, {len(recs)} records, {inf.total_bytes} bytes"


@pytest.mark.parametrize("fmt", ["lmdb", "tar", "hdf5"])
def test_non_folder_formats_accept_any_key(tmp_path, fmt):
    recs = [
        ("../../etc/passwd", b"x"),
        ("/abs", b"y"),
        ("a\\b", b""),
        (storage.MANIFEST, b"z"),
        ("a", b"1"),
        ("a/b", b"2"),
        ("line\nbreak=x\r\u2028\x85", b"3"),
        ("k" * 2000, b"4"),
    ]
    _write(tmp_path / "s", recs, fmt)
    assert list(storage.read_all(tmp_path / "s")) == recs


def test_dict_records_are_written_in_insertion_order(tmp_path):
    recs = {"b": b"2", "a": b"1"}
    storage.write(tmp_path / "s", recs, format="lmdb")
    assert list(storage.read_all(tmp_path / "s")) == [("b", b"2"), ("a", b"1")]


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
                seen.append((m.pax_headers[tar_store.PAX_KEY], tar.extractfile(m).read()))
    assert seen == recs


def test_lmdb_grows_its_map_as_needed(tmp_path):
    recs = [(f"k{i}", BIG) for i in range(3)]
    storage.write(tmp_path / "s", recs, format="lmdb", map_size=1 << 20)
    assert list(storage.read_all(tmp_path / "s")) == recs


def test_values_may_be_bytearray_or_memoryview(tmp_path):
    recs = [("a", bytearray(b"ab")), ("b", memoryview(b"cd"))]
    storage.write(tmp_path / "s", recs, format="hdf5")
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"ab"), ("b", b"cd")]


def test_empty_store_round_trips(tmp_path):
    for fmt in FORMATS:
        assert storage.write(tmp_path / fmt, [], format=fmt).count == 0
        assert list(storage.read_all(tmp_path / fmt)) == []
        assert list(storage.StoreIterableDataset(tmp_path / fmt)) == []


def test_writing_and_verifying_need_no_torch():
    import subprocess
    import sys

    code = (
        "import sys; from tricks_helpers import storage; "
        "assert not {'torch', 'h5py', 'lmdb'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ----------------------------------------------------------------------------- input errors


@pytest.mark.parametrize(
    "key, why",
    [
        ("../evil", "'..'"),
        ("a/../b", "'..'"),
        ("/etc/x", "absolute"),
        ("a//b", "empty"),
        ("a/./b", "'.'"),
        ("a\\b", "backslash"),
        ("dir/", "empty"),
        (storage.MANIFEST, "manifest"),
        ("x" * 256, "255 bytes"),
    ],
)
def test_folder_refuses_unsafe_keys(tmp_path, key, why):
    with pytest.raises(ValueError, match=f"not safe as a file name.*{why}"):
        storage.write(tmp_path / "s", [("ok", b"1"), (key, b"2")], format="folder")
    assert list(tmp_path.iterdir()) == []


def test_folder_refuses_file_folder_clash(tmp_path):
    with pytest.raises(ValueError, match="clashes"):
        storage.write(tmp_path / "s", [("a", b"1"), ("a/b", b"2")], format="folder")
    with pytest.raises(ValueError, match="clashes"):
        storage.write(tmp_path / "t", [("a/b", b"1"), ("a", b"2")], format="folder")


@pytest.mark.parametrize(
    "recs, exc, match",
    [
        ([("a", b"1"), ("a", b"2")], ValueError, "record 1: duplicate key 'a'"),
        ([(3, b"1")], TypeError, "key must be a str"),
        ([("", b"1")], ValueError, "empty key"),
        ([("a\x00b", b"1")], ValueError, "NUL"),
        ([("\ud800", b"1")], ValueError, "not valid UTF-8"),
        ([("a", "text")], TypeError, "value must be bytes"),
        ([("a", b"1", "extra")], TypeError, "expected a \\(key, value\\) pair"),
        (["ab"], TypeError, "expected a \\(key, value\\) pair, got str"),
        ("ab", TypeError, "records must be an iterable of \\(key, value\\) pairs or a mapping"),
        (7, TypeError, "records must be an iterable"),
    ],
)
def test_bad_records_are_refused(tmp_path, recs, exc, match):
    with pytest.raises(exc, match=match):
        storage.write(tmp_path / "s", recs, format="lmdb")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda p: storage.write(p, [], format="zip"), ValueError, "format must be one of"),
        (lambda p: storage.write(p, [], format=3), TypeError, "format must be str"),
        (
            lambda p: storage.write(p, [], format="hdf5", shard_records=3),
            ValueError,
            "do not apply to format 'hdf5'",
        ),
        (
            lambda p: storage.write(p, [("a", b"")], format="tar", shard_records=0),
            ValueError,
            "shard_records must be an integer >= 1",
        ),
        (
            lambda p: storage.write(p, [("a", b"")], format="tar", shard_records="9"),
            TypeError,
            "shard_records must be an integer",
        ),
        (
            lambda p: storage.write(p, [("a", b"")], format="lmdb", map_size=-1),
            ValueError,
            "map_size must be an integer in \\[4096, ",
        ),
        (
            lambda p: storage.write(p, [("a", b"")], format="lmdb", map_size=2.5),
            TypeError,
            "map_size must be an integer",
        ),
        (
            lambda p: storage.write(p, [], overwrite="yes"),
            TypeError,
            "overwrite must be True or False",
        ),
        (lambda p: storage.write(p, [], progress=1), TypeError, "progress must be True or False"),
        (lambda p: storage.write(123, []), TypeError, "write: path must be str or PathLike"),
        (
            lambda p: storage.write(p / "missing" / "s", [], format="tar"),
            StorageError,
            "parent folder",
        ),
        (lambda p: storage.read_all(None), TypeError, "read_all: path must be str or PathLike"),
        (lambda p: storage.verify(b"x"), TypeError, "verify: path must be str or PathLike"),
        (lambda p: storage.info(1), TypeError, "info: path must be str or PathLike"),
        (lambda p: storage.recover(1.0), TypeError, "recover: path must be str or PathLike"),
    ],
)
def test_argument_errors_follow_the_package_policy(tmp_path, call, exc, match):
    with pytest.raises(exc, match=match):
        call(tmp_path / "s")
    assert [p for p in tmp_path.iterdir() if p.name != "s"] == []


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


# ----------------------------------------------------------------------------- overwriting


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


def test_overwrite_through_a_symlink_is_refused_and_changes_nothing(tmp_path):
    storage.write(tmp_path / "real", [("a", b"old")], format="tar")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(StorageError, match="'link' is a symbolic link"):
        storage.write(tmp_path / "link", [("a", b"new")], format="tar", overwrite=True)
    assert (tmp_path / "link").is_symlink()
    assert list(storage.read_all(tmp_path / "link")) == [("a", b"old")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


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


def test_stale_temporaries_of_dead_writers_are_removed_by_the_next_write(tmp_path):
    from tricks_helpers.storage import writing as write_mod

    dead = 2**22 + 12345  # above the default pid_max: no such process
    stale = tmp_path / f".s.tmp-{write_mod.HOST}-{dead}-0123abcd"
    stale.mkdir()
    (stale / "junk").write_bytes(b"half a store")
    live = tmp_path / f".s.tmp-{write_mod.HOST}-{os.getpid()}-0123abcd"  # a running writer
    live.mkdir()
    other_host = tmp_path / f".s.tmp-ffffffff-{dead}-0123abcd"  # another machine's writer
    other_host.mkdir()
    storage.write(tmp_path / "s", [("a", b"1")], format="tar")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["s", live.name, other_host.name])


def test_recover_puts_back_an_old_store_left_by_the_fallback_protocol(tmp_path):
    from tricks_helpers.storage import writing as write_mod

    storage.write(tmp_path / "s", [("a", b"old")], format="folder")
    dead = 2**22 + 12345
    old = tmp_path / f".s.old-{write_mod.HOST}-{dead}-0123abcd"
    (tmp_path / "s").rename(old)  # a writer killed between its two renames
    assert storage.recover(tmp_path / "s") == [f"restored s from {old.name}"]
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"old")]
    assert storage.recover(tmp_path / "s") == []


def test_fallback_protocol_without_an_atomic_swap(tmp_path, monkeypatch):
    from tricks_helpers.storage import writing as write_mod

    monkeypatch.setattr(write_mod, "_libc_renameat2", lambda: None)
    stages = []
    monkeypatch.setattr(write_mod, "_stage_hook", stages.append)
    storage.write(tmp_path / "s", [("a", b"old")], format="tar")
    storage.write(tmp_path / "s", [("a", b"new")], format="tar", overwrite=True)
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"new")]
    assert "old-moved-away" in stages and "swapped" not in stages
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_progress_bar_only_when_asked(tmp_path, capsys):
    storage.write(tmp_path / "quiet", [("a", b"1")], format="tar")
    assert capsys.readouterr().err == ""
    storage.write(tmp_path / "loud", [("a", b"1")], format="tar", progress=True)
    assert "write tar" in capsys.readouterr().err


def test_error_messages_never_show_the_full_path(tmp_path):
    storage.write(tmp_path / "s", [("a", b"1")], format="tar")
    with pytest.raises(FileExistsError) as err:
        storage.write(tmp_path / "s", [], format="tar")
    assert str(tmp_path) not in str(err.value)


# ----------------------------------------------------------------------------- corruption


def _flip_value_byte(path: Path, value: bytes) -> None:
    """Flip one byte inside every copy of ``value`` in ``path``."""
    data = bytearray(path.read_bytes())
    at = data.find(value)
    assert at >= 0, "value not found in payload"
    while at >= 0:
        data[at + len(value) // 2] ^= 0xFF
        at = data.find(value, at + 1)
    path.write_bytes(bytes(data))


def _payload_file(root: Path, fmt: str, key: str) -> Path:
    return {
        "folder": root / key,
        "lmdb": root / "lmdb" / "data.mdb",
        "tar": root / "shard-00000.tar",
        "hdf5": root / "data.h5",
    }[fmt]


@pytest.fixture()
def thirty(tmp_path):
    rng = np.random.default_rng(1)
    return [
        (f"img/{i:03d}", rng.integers(0, 256, 2000, dtype=np.uint8).tobytes()) for i in range(30)
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_flipped_value_byte_is_caught(tmp_path, thirty, fmt):
    recs = thirty
    _write(tmp_path / "s", recs, fmt)
    _flip_value_byte(_payload_file(tmp_path / "s", fmt, recs[7][0]), recs[7][1][:64])
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
def test_a_flipped_key_bit_in_the_manifest_is_caught(tmp_path, thirty, fmt):
    _write(tmp_path / "s", thirty, fmt)
    m = tmp_path / "s" / storage.MANIFEST
    data = bytearray(m.read_bytes())
    at = data.find(b'"img/005"')
    data[at + 4] ^= 0x01  # 'img/005' -> 'img.005', a valid key
    m.write_bytes(bytes(data))
    for call in (storage.verify, storage.info, storage.StoreDataset, storage.read_all):
        with pytest.raises(
            CorruptRecordError, match="manifest _store.json is damaged: it fails its digest"
        ):
            call(tmp_path / "s")


def test_a_tar_offset_off_by_one_is_caught_even_with_a_valid_digest(tmp_path, thirty):
    _write(tmp_path / "s", thirty, "tar")

    def shift(m):
        m["records"][5][4] += 1

    _edit_manifest(tmp_path / "s", shift, redigest=False)
    with pytest.raises(CorruptRecordError, match="fails its digest"):
        storage.StoreDataset(tmp_path / "s")
    _edit_manifest(tmp_path / "s", lambda m: None, redigest=True)  # a crafted manifest
    with pytest.raises(CorruptRecordError, match="record 5 'img/005' has a bad shard or offset"):
        storage.verify(tmp_path / "s")
    with pytest.raises(CorruptRecordError, match="record 5"):
        storage.StoreDataset(tmp_path / "s")


def test_a_tar_offset_off_by_a_block_is_caught_by_the_structure_check(tmp_path, thirty):
    _write(tmp_path / "s", thirty, "tar")
    _edit_manifest(
        tmp_path / "s",
        lambda m: m["records"][5].__setitem__(4, m["records"][5][4] + 512),
        redigest=True,
    )
    with pytest.raises(CorruptRecordError, match="record 5 'img/005'"):
        storage.verify(tmp_path / "s")
    with pytest.raises(CorruptRecordError, match="record 5 'img/005' fails its checksum"):
        storage.StoreDataset(tmp_path / "s")[5]


@pytest.mark.parametrize("bad_key", ["../outside.bin", "/etc/hostname", "a/../../x"])
def test_a_manifest_key_never_reads_outside_the_store(tmp_path, bad_key):
    (tmp_path / "outside.bin").write_bytes(b"secret")
    storage.write(tmp_path / "s", [("a", b"secret")], format="folder")
    _edit_manifest(tmp_path / "s", lambda m: m["records"][0].__setitem__(0, bad_key), redigest=True)
    with pytest.raises(CorruptRecordError, match="is not a safe path in the store"):
        storage.StoreDataset(tmp_path / "s")[0]
    with pytest.raises(CorruptRecordError, match="is not a safe path in the store"):
        storage.verify(tmp_path / "s")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda m: m["files"].update({"../x": [1, "0" * 64]}), "bad file entry '../x'"),
        (lambda m: m["files"].clear(), "payload files"),
        (lambda m: m["records"][0].__setitem__(1, -1), "record 0 is malformed"),
        (lambda m: m["records"][0].__setitem__(2, "xyz"), "record 0 is malformed"),
        (lambda m: m["records"].append(list(m["records"][0])), "count"),
        (
            lambda m: m.update(
                count=m["count"] + 1, records=m["records"] + [list(m["records"][0])]
            ),
            "record 30 is malformed or repeats a key",
        ),
        (lambda m: m.update(format="zip"), "format, records or files missing"),
    ],
)
def test_manifest_fields_are_checked_even_with_a_valid_digest(tmp_path, thirty, edit, match):
    _write(tmp_path / "s", thirty, "lmdb")
    _edit_manifest(tmp_path / "s", edit, redigest=True)
    with pytest.raises(CorruptRecordError, match=match):
        storage.verify(tmp_path / "s")


def test_not_a_store_and_broken_manifest(tmp_path):
    with pytest.raises(StorageError, match="no store at 'nothing'"):
        storage.verify(tmp_path / "nothing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(StorageError, match="not a store written by"):
        storage.read_all(tmp_path / "plain")
    storage.write(tmp_path / "s", [("a", b"1")], format="hdf5")
    m = tmp_path / "s" / storage.MANIFEST
    m.write_bytes(m.read_bytes()[:-20])
    with pytest.raises(CorruptRecordError, match=r"manifest _store.json is damaged: unreadable"):
        storage.StoreDataset(tmp_path / "s")
    m.write_text(json.dumps({"version": 1, "format": "hdf5", "count": 0, "records": []}))
    with pytest.raises(CorruptRecordError, match="unreadable \\(KeyError\\)"):
        storage.info(tmp_path / "s")
    m.write_bytes(mf.manifest_bytes({"version": 1, "format": "hdf5", "count": 0, "records": []}))
    with pytest.raises(StorageError, match="manifest version 1; this module reads version 3"):
        storage.info(tmp_path / "s")


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


@pytest.mark.parametrize("fmt", ["lmdb", "hdf5"])
def test_truncated_single_file_formats_fail_cleanly(tmp_path, fmt):
    recs = [(f"k{i}", bytes([i]) * 5000) for i in range(50)]
    storage.write(tmp_path / "s", recs, format=fmt)
    payload = _payload_file(tmp_path / "s", fmt, "")
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


def test_folder_missing_and_truncated_files(tmp_path):
    recs = [(f"c/{i}", b"abc" * 10) for i in range(5)]
    storage.write(tmp_path / "s", recs, format="folder")
    (tmp_path / "s" / "c" / "3").write_bytes(b"abc")
    with pytest.raises(
        TruncatedStoreError,
        match=r"file 'c/3' has 3 bytes, expected 30; first "
        r"affected record 3 'c/3'",
    ):
        storage.verify(tmp_path / "s")
    (tmp_path / "s" / "c" / "3").unlink()
    with pytest.raises(TruncatedStoreError, match="file 'c/3' is missing"):
        storage.verify(tmp_path / "s")
    with pytest.raises(TruncatedStoreError, match="record 3 'c/3' is missing"):
        storage.StoreDataset(tmp_path / "s")[3]


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


# ----------------------------------------------------------------------------- handles


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
    import gc

    gc.collect()
    assert len(lmdb_store._ENVS) == before


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


def test_shard_grouping_is_linear_in_the_shard_count(tmp_path):
    n = 40_000  # the quadratic version took minutes here
    m = {
        "format": "tar",
        "shards": [f"shard-{i:05d}.tar" for i in range(n)],
        "files": {},
        "records": [[f"k{i}", 1, "0" * 64, i, 1536] for i in range(n)],
        "generation": "0" * 32,
    }
    store = mf.Store(tmp_path, m, os.open(tmp_path, os.O_RDONLY))
    start = time.perf_counter()
    members = store.shard_members()
    assert members[123] == [123] and len(members) == n
    assert time.perf_counter() - start < 5.0


def test_iterable_dataset_groups_shards_once_per_iteration(stores, monkeypatch):
    _, paths = stores
    ds = storage.StoreIterableDataset(paths["tar"])
    calls = []
    original = ds.store.shard_members
    monkeypatch.setattr(ds.store, "shard_members", lambda: calls.append(1) or original())
    assert len(list(ds)) == len(ds)
    assert calls == [1]


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


# ----------------------------------------------------------------------------- workers


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
