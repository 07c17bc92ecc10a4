"""Readers under faults (issue 24): no deleted user data, no killed process, no two generations.

The killed-process cases run in a child process (forked once per case), which would die by a
signal where the parent records it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from tricks_helpers import storage
from tricks_helpers.storage import _files, writing

RECS = [(f"k{i:04d}", bytes([i % 251]) * (20 + (i * 37) % 300)) for i in range(600)]


def test_a_user_folder_holding_a_file_named_like_the_manifest_is_never_deleted(tmp_path):
    user = tmp_path / "photos"
    user.mkdir()
    (user / "holiday.jpg").write_bytes(b"precious")
    (user / storage.MANIFEST).write_text('{"format": "folder"}')
    with pytest.raises(storage.StorageError, match="is not a store .*never replaced nor deleted"):
        storage.write(user, [("a", b"x")], overwrite=True)
    assert (user / "holiday.jpg").read_bytes() == b"precious"
    # a real store a user added a file to is not replaced either
    storage.write(tmp_path / "s", [("a", b"x")], "lmdb")
    (tmp_path / "s" / "notes.txt").write_text("mine")
    with pytest.raises(storage.StorageError, match=r"holds files its manifest does not list"):
        storage.write(tmp_path / "s", [("a", b"y")], "lmdb", overwrite=True)
    assert (tmp_path / "s" / "notes.txt").read_text() == "mine"


def test_an_old_store_that_cannot_be_removed_is_reported_with_where_it_is(tmp_path, monkeypatch):
    storage.write(tmp_path / "s", [("a", b"old")])
    monkeypatch.setattr(writing, "remove_tree", lambda p: PermissionError(13, "Permission denied"))
    with pytest.warns(storage.StorageWarning, match=r"could not remove '\.s\.tmp-.*replaced"):
        storage.write(tmp_path / "s", [("a", b"new")], overwrite=True)
    assert list(storage.read_all(tmp_path / "s")) == [("a", b"new")]  # the new one is in place
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith(".s.")]
    assert len(left) == 1


def test_lmdb_errors_are_the_documented_ones(tmp_path):
    with pytest.raises(ValueError, match=r"map_size must be an integer in \[4096, "):
        storage.write(tmp_path / "s", RECS[:3], "lmdb", map_size=2**63 - 1)
    assert not tmp_path.joinpath("s").exists()


_DEATH_CHILD = r"""
import json, os, random, sys
from pathlib import Path
import numpy as np
from tricks_helpers import storage
from tricks_helpers.storage import datasets, arrays
root = Path(sys.argv[1])
recs = [(f"k{i:04d}", bytes([i % 251]) * (20 + (i * 37) % 300)) for i in range(600)]
st = root / "s"
storage.write(st, recs, "lmdb")
f = st / "lmdb" / "data.mdb"
clean = f.read_bytes()
size, rng = len(clean), random.Random(7)
branch = [p for p in range(2, size // 4096) if clean[p * 4096 + 10] & 1]
cases = [("truncate", n) for n in rng.sample(range(0, size, 512), 12)]
cases += [("flip", (b * 4096 + 12 + 2 * k, 16)) for b in branch for k in range(4)]  # SIGBUS before
cases += [("flip", (rng.randrange(size), 1 << rng.randrange(8))) for _ in range(16)]
def read(mode):
    if mode == "dataset":
        ds = datasets.StoreDataset(st)
        return [ds[i] for i in range(len(ds))]
    if mode == "iterable":
        return list(datasets.StoreIterableDataset(st))
    return list(storage.read_all(st, check=False))
for kind, arg in cases:
    for mode in ("dataset", "iterable", "unchecked"):
        pid = os.fork()
        if pid == 0:
            if kind == "truncate":
                os.truncate(f, arg)
            else:
                b = bytearray(clean); b[arg[0]] ^= arg[1]; f.write_bytes(bytes(b))
            try:
                read(mode)
                os._exit(0)
            except storage.StorageError:
                os._exit(3)
            except BaseException:
                os._exit(4)
        status = os.waitpid(pid, 0)[1]
        f.write_bytes(clean)
        print(json.dumps({"kind": kind, "arg": arg, "mode": mode, "status": status}), flush=True)
# a memmap truncated after it was opened
p = storage.write_memmap(root / "a.npy", [np.full((64, 64), i, np.uint8) for i in range(64)],
                         64, (64, 64))
ds = arrays.MemmapDataset(p)
ds[0]
os.truncate(p, 4096)
pid = os.fork()
if pid == 0:
    try:
        ds[40]
        os._exit(0)
    except storage.StorageError:
        os._exit(3)
print(json.dumps({"kind": "memmap", "arg": 4096, "mode": "memmap",
                  "status": os.waitpid(pid, 0)[1]}), flush=True)
"""


def test_damaged_lmdb_and_truncated_memmaps_raise_and_never_kill_the_reader(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _DEATH_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    killed = [r for r in rows if os.WIFSIGNALED(r["status"])]
    assert killed == []
    assert len(rows) > 100 and {r["kind"] for r in rows} == {"truncate", "flip", "memmap"}
    # every damage that changes what LMDB parses raises a StorageError (exit 3), none other
    assert {os.WEXITSTATUS(r["status"]) for r in rows} <= {0, 3}
    assert all(os.WEXITSTATUS(r["status"]) == 3 for r in rows if r["kind"] != "flip")


@pytest.mark.parametrize("fmt", storage.FORMATS)
@pytest.mark.parametrize("check", [True, False])
def test_a_store_replaced_under_a_reader_is_never_mixed_in(tmp_path, fmt, check):
    old = [(f"c/{i:03d}", b"old" * (i + 1)) for i in range(40)]
    new = [(f"c/{i:03d}", b"NEW" * (i + 1)) for i in range(40)]
    opts = {"shard_records": 4} if fmt == "tar" else {}
    storage.write(tmp_path / "s", old, fmt, **opts)
    ds = storage.StoreDataset(tmp_path / "s", check=check)
    stream = storage.read_all(tmp_path / "s", check=check)
    got, streamed = [ds[i] for i in range(5)], [next(stream) for _ in range(5)]
    storage.write(tmp_path / "s", new, fmt, overwrite=True, **opts)
    for i in range(5, 40):  # the old generation, or a clear error: never a mix
        try:
            got.append(ds[i])
        except storage.StoreReplacedError:
            break
    try:
        streamed += list(stream)
    except storage.StoreReplacedError:
        pass
    assert got == old[: len(got)] and streamed == old[: len(streamed)]
    fresh = storage.StoreDataset(tmp_path / "s", check=check)
    assert [fresh[i] for i in range(40)] == new


def test_a_pickled_dataset_of_a_replaced_store_raises_replaced(tmp_path):
    import pickle

    storage.write(tmp_path / "s", RECS[:5], "lmdb")
    copy = pickle.dumps(storage.StoreDataset(tmp_path / "s"))
    storage.write(tmp_path / "s", RECS[5:9], "lmdb", overwrite=True)
    with pytest.raises(storage.StoreReplacedError, match="'s' was replaced while reading"):
        pickle.loads(copy)[0]
    mm = storage.write_memmap(tmp_path / "a.npy", [np.zeros((2, 2), np.uint8)], 1, (2, 2))
    mcopy = pickle.dumps(storage.MemmapDataset(mm))
    storage.write_memmap(mm, [np.ones((2, 2), np.uint8)], 1, (2, 2), overwrite=True)
    with pytest.raises(storage.StoreReplacedError, match="'a.npy' was replaced while reading"):
        pickle.loads(mcopy)[0]


# ------------------------------------------------------------ verify while the store is replaced

_REWRITER = r"""
import sys
from pathlib import Path
from tricks_helpers import storage
st, stop, count = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
formats, n = sys.argv[4].split(","), 0
while not stop.exists():
    fmt = formats[n % len(formats)]
    recs = [(f"c/{i:03d}", bytes([n % 251]) * (200 + i)) for i in range(60)]
    storage.write(st, recs, fmt, overwrite=True, **({"shard_records": 8} if fmt == "tar" else {}))
    n += 1
    count.with_suffix(".new").write_text(str(n))
    count.with_suffix(".new").replace(count)
"""


@pytest.mark.parametrize("formats", ["folder,tar", "lmdb,hdf5"])
def test_verify_while_another_process_replaces_the_store_never_reports_damage(tmp_path, formats):
    st, stop, count = tmp_path / "s", tmp_path / "stop", tmp_path / "count"
    storage.write(st, [("c/000", b"x")], "tar")
    writer = subprocess.Popen(
        [sys.executable, "-c", _REWRITER, str(st), str(stop), str(count), formats],
        stderr=subprocess.PIPE,
        text=True,
    )
    outcomes = Counter()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and int(count.read_text() if count.exists() else 0) < 12:
            try:
                storage.verify(st)  # a CorruptRecordError here is the false alarm: test fails
                list(storage.read_all(st))
                outcomes["ok"] += 1
            except storage.StoreReplacedError:
                outcomes["replaced"] += 1
        writes = int(count.read_text())
    finally:
        stop.touch()
        _, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err[-2000:]
    assert writes >= 12, "the store was hardly replaced: the race was not exercised"
    assert outcomes["ok"] + outcomes["replaced"] >= 12, outcomes
    storage.verify(st)


# ------------------------------------------------------------ recover when a leftover stays


def test_recover_reports_a_leftover_it_cannot_remove_once_per_call(tmp_path, monkeypatch):
    storage.write(tmp_path / "s", [("a", b"1")], "tar")
    dead = 2**22 + 12345  # above the default pid_max: no such process
    tmp = tmp_path / f".s.tmp-{writing.HOST}-{dead}-0123abcd"
    (tmp / "sub").mkdir(parents=True)
    (tmp / "sub" / "junk").write_bytes(b"half a store")
    old = tmp_path / f".s.old-{writing.HOST}-{dead}-0123abcd"
    storage.write(old, [("a", b"0")], "tar")

    def rmtree_denied(path, onerror=None, **_):  # as for a read-only folder, as a non-root user
        onerror(
            os.rmdir, str(path), (PermissionError, PermissionError(13, "Permission denied"), None)
        )

    monkeypatch.setattr(_files.shutil, "rmtree", rmtree_denied)
    for _ in range(2):  # each call tries again, and says so again
        with pytest.warns(storage.StorageWarning) as caught:
            done = storage.recover(tmp_path / "s")
        assert len(caught) == 2, [str(w.message) for w in caught]
        assert done == [
            f"could not remove {old.name!r} (an old store) in the folder of the store: "
            "PermissionError: Permission denied; it is left there, remove it by hand",
            f"could not remove {tmp.name!r} (a temporary) in the folder of the store: "
            "PermissionError: Permission denied; it is left there, remove it by hand",
        ]
        assert not any(line.startswith("removed") for line in done)
        assert (tmp / "sub" / "junk").exists() and old.exists()
    monkeypatch.undo()
    assert storage.recover(tmp_path / "s") == [f"removed {old.name}", f"removed {tmp.name}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


# ------------------------------------------------------------ HDF5 read unchecked, damaged

_HDF5_CHILD = r"""
import json, os, sys
from pathlib import Path
from tricks_helpers import storage
from tricks_helpers.storage import datasets
st = Path(sys.argv[1]) / "s"
recs = [(f"k{i:03d}", bytes([i % 251 + 1]) * (100 + 13 * i)) for i in range(40)]
storage.write(st, recs, "hdf5")
f = st / "data.h5"
clean = f.read_bytes()
size = len(clean)
cases = [("truncate", n) for n in range(0, size, size // 5)]
cases += [("flip", (p, 1 << (p % 8))) for p in range(0, 2400, 37)]  # superblock, headers
cases += [("flip", (p, 0x40)) for p in range(2400, size, size // 20)]  # values, offsets, b-tree
for kind, arg in cases:
    pid = os.fork()
    if pid == 0:  # both readers in one child: a signal in either kills it
        if kind == "truncate":
            os.truncate(f, arg)
        else:
            b = bytearray(clean); b[arg[0]] ^= arg[1]; f.write_bytes(bytes(b))
        codes = []
        for mode in ("dataset", "unchecked"):
            try:
                if mode == "dataset":
                    ds = datasets.StoreDataset(st, check=False)
                    got = [ds[i] for i in range(len(ds))]
                else:
                    got = list(storage.read_all(st, check=False))
                codes.append(0 if got == recs else 1)  # 1: the unchecked (damaged) bytes
            except storage.StorageError:
                codes.append(3)
            except BaseException:
                codes.append(4)
        os._exit(codes[0] * 16 + codes[1])
    status = os.waitpid(pid, 0)[1]
    print(json.dumps({"kind": kind, "arg": arg, "status": status}), flush=True)
"""


def test_damaged_hdf5_read_unchecked_never_kills_the_reader(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", _HDF5_CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(rows) > 80
    assert [r for r in rows if os.WIFSIGNALED(r["status"])] == []
    codes = Counter(c for r in rows for c in divmod(os.WEXITSTATUS(r["status"]), 16))
    assert set(codes) <= {0, 1, 3}, codes  # never 4: a raw h5py error
    assert codes[3] > 0 and codes[0] > 0  # some damage is detected, some harmless
    truncated = {os.WEXITSTATUS(r["status"]) for r in rows if r["kind"] == "truncate"}
    assert truncated == {3 * 16 + 3}


@pytest.mark.parametrize("fmt", ["folder", "lmdb"])
def test_opening_a_store_at_the_moment_it_is_swapped_gives_the_new_one(
    tmp_path, monkeypatch, thirty, fmt
):
    """The reader opened the old directory; the writer swaps and deletes it before the reader
    reads the manifest: the reader opens the path again, never reports 'not a store'."""
    from tricks_helpers.storage import store as store_module

    path = tmp_path / "s"
    storage.write(path, thirty[:10], format=fmt)
    real = store_module._read_manifest
    raced = []

    def swap_first(fd, name):
        if not raced:
            raced.append(True)
            storage.write(path, thirty[10:], format=fmt, overwrite=True)  # swap, delete old
        return real(fd, name)

    monkeypatch.setattr(store_module, "_read_manifest", swap_first)
    assert list(storage.read_all(path)) == thirty[10:]
    assert raced == [True]


@pytest.mark.parametrize("fmt", ["folder", "lmdb", "tar"])
def test_a_store_deleted_while_reading_is_reported_as_deleted_not_replaced(tmp_path, fmt):
    """Issue 42: a deleted store was reported as "replaced (written again at the same path)"."""
    import pickle
    import shutil

    storage.write(tmp_path / "s", RECS[:5], fmt)
    ds = storage.StoreDataset(tmp_path / "s")
    copy = pickle.dumps(ds)
    shutil.rmtree(tmp_path / "s")
    for reader in (ds, pickle.loads(copy)):
        with pytest.raises(storage.StoreReplacedError, match="'s' was deleted while reading"):
            reader[1]
