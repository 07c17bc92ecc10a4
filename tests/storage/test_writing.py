"""Tests of storage.writing: round trips of every format, input errors, overwriting safely.

Writers killed, full disks and flipped bits in child processes are in test_writer_faults.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from tricks_helpers import storage
from tricks_helpers.storage.manifest import StorageError

from .support import (
    FORMATS,
    write_store,
)


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
    write_store(tmp_path / "s", recs, fmt)
    assert list(storage.read_all(tmp_path / "s")) == recs


def test_dict_records_are_written_in_insertion_order(tmp_path):
    recs = {"b": b"2", "a": b"1"}
    storage.write(tmp_path / "s", recs, format="lmdb")
    assert list(storage.read_all(tmp_path / "s")) == [("b", b"2"), ("a", b"1")]


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

    code = (
        "import sys; from tricks_helpers import storage; "
        "assert not {'torch', 'h5py', 'lmdb'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


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
        write_store(tmp_path / "s", records(), fmt)
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


def test_stale_temporaries_of_dead_writers_are_removed_by_the_nextwrite_store(tmp_path):
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
