"""Readers under faults (issue 24): no deleted user data, no killed process, no two generations.

The killed-process cases run in a child process (forked once per case), which would die by a
signal where the parent records it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tricks_helpers import storage
from tricks_helpers.storage import writing

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
