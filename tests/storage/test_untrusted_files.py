"""Special files, links and resized files in a store, and readers shared by threads (issue 32).

A dataset folder a reader points a dataset at is untrusted input: a record or payload file
replaced by a FIFO must not hang a reader, a link to ``/dev/zero`` must not exhaust memory, and
``check=False`` must still refuse what the manifest's sizes and the store's folder exclude.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from tricks_helpers import storage
from tricks_helpers.storage import (
    CorruptRecordError,
    StorageError,
    TruncatedStoreError,
    _files,
    arrays,
    lmdb_store,
    tar_store,
)

from .support import FORMATS, payload_file

RECS = [(f"c/{i:03d}", bytes([i]) * (100 + i)) for i in range(40)]


def _write(path: Path, fmt: str) -> Path:
    opts = {"shard_records": 10} if fmt == "tar" else {}
    storage.write(path, RECS, format=fmt, **opts)
    return path


def _within(seconds: float, fn, fifo: Path | None = None):
    """``fn()`` run in a thread: its result, or its exception raised here. When it is still
    running after ``seconds`` (blocked opening ``fifo``), a writer end is opened and closed
    to let it go, and the test fails as a hang."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        if fifo is not None:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        t.join(5)
        pytest.fail(f"hung for more than {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _replace_with(p: Path, make) -> None:
    p.unlink()
    make(p)


# ------------------------------------------------------------ FIFOs and devices


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("check", [True, False])
def test_a_payload_file_replaced_by_a_fifo_raises_and_never_hangs(tmp_path, fmt, check):
    root = _write(tmp_path / "s", fmt)
    fifo = payload_file(root, fmt, RECS[3][0])
    _replace_with(fifo, os.mkfifo)
    ds = storage.StoreDataset(root, check=check)
    with pytest.raises(CorruptRecordError, match=r"is a FIFO \(named pipe\); a store holds only"):
        _within(10, lambda: ds[3], fifo)
    with pytest.raises(CorruptRecordError, match=r"is a FIFO"):
        _within(10, lambda: list(storage.StoreIterableDataset(root, check=check)), fifo)
    with pytest.raises(CorruptRecordError, match=r"is a FIFO"):
        _within(10, lambda: storage.verify(root), fifo)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_payload_file_linked_to_a_device_is_refused_without_reading_it(tmp_path, fmt, device):
    root = _write(tmp_path / "s", fmt)
    target = payload_file(root, fmt, RECS[3][0])
    _replace_with(target, lambda p: p.symlink_to(device))
    for check in (True, False):
        ds = storage.StoreDataset(root, check=check)
        with pytest.raises(CorruptRecordError, match=r"is a symbolic link; a store holds only"):
            _within(10, lambda ds=ds: ds[3])
    with pytest.raises(CorruptRecordError, match=r"is a symbolic link"):
        _within(10, lambda: storage.verify(root))


def test_the_error_names_the_folder_record_that_is_not_a_regular_file(tmp_path):
    root = _write(tmp_path / "s", "folder")
    _replace_with(root / "c" / "007", os.mkfifo)
    with pytest.raises(CorruptRecordError, match=r"file 'c/007' is a FIFO") as caught:
        _within(10, lambda: storage.StoreDataset(root, check=False)[7], root / "c" / "007")
    assert (caught.value.index, caught.value.key) == (7, "c/007")
    with pytest.raises(CorruptRecordError, match=r"file 'c/007' is a FIFO") as caught:
        _within(10, lambda: list(storage.read_all(root, check=False)), root / "c" / "007")
    assert (caught.value.index, caught.value.key) == (7, "c/007")


def _npy(path: Path) -> Path:
    rows = (np.full((2, 3), i, np.uint8) for i in range(4))
    return storage.write_memmap(path, rows, count=4, shape=(2, 3))


def test_memmap_dataset_refuses_a_fifo_or_a_device_path_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.npy"
    os.mkfifo(fifo)
    with pytest.raises(StorageError, match=r"'fifo.npy' .*it is a FIFO \(named pipe\), not a"):
        _within(10, lambda: storage.MemmapDataset(fifo), fifo)
    zero = tmp_path / "zero.npy"
    zero.symlink_to("/dev/zero")
    with pytest.raises(StorageError, match=r"'zero.npy' .*a device or other special file"):
        _within(10, lambda: storage.MemmapDataset(zero))


def test_memmap_dataset_refuses_a_file_replaced_by_a_fifo_after_it_was_opened(tmp_path):
    path = _npy(tmp_path / "a.npy")
    ds = storage.MemmapDataset(path)  # measured; each process opens the file on first use
    _replace_with(path, os.mkfifo)
    with pytest.raises(storage.StoreReplacedError, match=r"'a.npy' was replaced while reading"):
        _within(10, lambda: ds[0], path)


# ------------------------------------------------------------ check=False: links and sizes


def test_a_folder_record_linked_outside_the_store_is_never_served(tmp_path):
    root = _write(tmp_path / "s", "folder")
    secret = tmp_path / "secret"
    secret.write_bytes(b"s" * len(RECS[5][1]))  # the size the manifest states
    _replace_with(root / "c" / "005", lambda p: p.symlink_to(secret))
    for check in (True, False):
        with pytest.raises(CorruptRecordError, match=r"file 'c/005' is a symbolic link"):
            storage.StoreDataset(root, check=check)[5]
        with pytest.raises(CorruptRecordError, match=r"file 'c/005' is a symbolic link"):
            list(storage.read_all(root, check=check))


def test_a_class_folder_linked_outside_the_store_is_never_served(tmp_path):
    root = _write(tmp_path / "s", "folder")
    outside = tmp_path / "outside"
    (root / "c").rename(outside)  # every file has the size and bytes the manifest states
    (root / "c").symlink_to(outside)
    for check in (True, False):
        with pytest.raises(CorruptRecordError, match=r"file 'c/000' is a symbolic link"):
            storage.StoreDataset(root, check=check)[0]
    with pytest.raises(CorruptRecordError, match=r"is a symbolic link"):
        storage.verify(root)


@pytest.mark.parametrize("fmt", ["folder", "tar"])
def test_a_payload_file_grown_by_a_megabyte_is_refused_without_the_checksum(tmp_path, fmt):
    root = _write(tmp_path / "s", fmt)
    target = payload_file(root, fmt, RECS[2][0])
    data = target.read_bytes()
    target.write_bytes(b"\0" * 2**20 + data)  # grown at the front: every offset moves
    with pytest.raises(TruncatedStoreError, match=r"record 2 'c/002' .*(has|cannot be read)"):
        storage.StoreDataset(root, check=False)[2]
    with pytest.raises(TruncatedStoreError, match=r"bytes, expected"):
        list(storage.StoreIterableDataset(root, check=False))


# ------------------------------------------------------------ a read-only class folder


def _rmtree_as_a_user(real):
    """``shutil.rmtree`` as for a non-root user: a folder without its owner's write bit
    refuses to give up its entries (root ignores the bit, and the tests may run as root)."""

    def rmtree(path, onerror=None, **kw):
        for d, _dirs, files in os.walk(path):
            if (files or _dirs) and not os.stat(d).st_mode & 0o200:
                err = PermissionError(13, "Permission denied")
                return onerror(os.unlink, os.path.join(d, (files or _dirs)[0]), (None, err, None))
        return real(path, onerror=onerror, **kw)

    return rmtree


def test_overwrite_removes_the_old_store_even_with_a_read_only_class_folder(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        monkeypatch.setattr(_files.shutil, "rmtree", _rmtree_as_a_user(shutil.rmtree))
    root = tmp_path / "s"
    storage.write(root, [("cat/1", b"old"), ("dog/1", b"old")], "folder")
    os.chmod(root / "cat", 0o555)  # the user made a class folder read-only
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "could not remove" warning
        storage.write(root, [("cat/1", b"new")], "folder", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # nothing left under a hidden name
    assert list(storage.read_all(root)) == [("cat/1", b"new")]


# ------------------------------------------------------------ InMemoryStore: one snapshot


def test_in_memory_store_never_pairs_old_keys_with_new_values(tmp_path, monkeypatch):
    root = tmp_path / "s"
    storage.write(root, [("a", b"1111"), ("b", b"22")], "lmdb")
    real = arrays.open_store

    def open_then_rewrite(path, where):
        store = real(path, where)  # keys and sizes of the first generation
        storage.write(root, [("x", b"9999"), ("y", b"88")], "lmdb", overwrite=True)
        return store

    monkeypatch.setattr(arrays, "open_store", open_then_rewrite)
    with pytest.raises(storage.StoreReplacedError, match=r"'s' was replaced while reading"):
        storage.InMemoryStore(root)


# ------------------------------------------------------------ threads sharing one dataset

_BIG = np.random.default_rng(3)
BIG_RECS = [
    (f"c/{i:03d}", _BIG.integers(0, 256, 20000 + 1000 * i, dtype=np.uint8).tobytes())
    for i in range(40)
]


def _eight_threads(ds, recs, reads=200) -> list:
    """Eight threads reading random records of ``ds``: what went wrong (nothing, when safe)."""
    wrong: list = []

    def reader(seed: int) -> None:
        for i in np.random.default_rng(seed).integers(0, len(recs), reads):
            try:
                if ds[int(i)] != recs[int(i)]:
                    wrong.append(int(i))
            except Exception as exc:  # counted: none may fail
                wrong.append(repr(exc))

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return wrong


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("check", [False, True])
def test_a_dataset_shared_by_eight_threads_reads_every_record_right(tmp_path, fmt, check):
    opts = {"shard_records": 10} if fmt == "tar" else {}
    storage.write(tmp_path / "s", BIG_RECS, format=fmt, **opts)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: races show
    try:
        for _ in range(3):  # a fresh dataset each time: its reader is opened under the race
            ds = storage.StoreDataset(tmp_path / "s", check=check)
            assert _eight_threads(ds, BIG_RECS) == []
    finally:
        sys.setswitchinterval(interval)
    assert [ds[i] for i in range(len(BIG_RECS))] == BIG_RECS  # and it still reads afterwards


class _SlowSeek(io.BufferedReader):
    def seek(self, *args):  # another thread runs between a seek and its read
        at = super().seek(*args)
        time.sleep(0.002)
        return at


def test_tar_threads_never_read_at_another_threads_offset(tmp_path, monkeypatch):
    storage.write(tmp_path / "s", BIG_RECS, format="tar", shard_records=10)
    monkeypatch.setattr(tar_store.io, "BufferedReader", _SlowSeek)
    ds = storage.StoreDataset(tmp_path / "s", check=False)
    assert _eight_threads(ds, BIG_RECS, reads=20) == []


def test_hdf5_and_lmdb_readers_are_opened_once_by_racing_threads(tmp_path, monkeypatch):
    import h5py

    class SlowFile(h5py.File):
        def __getitem__(self, name):
            time.sleep(0.01)  # opening takes a while: other threads ask for records meanwhile
            return super().__getitem__(name)

    real_digest = lmdb_store.tree_digest

    def slow_digest(fd, size):
        time.sleep(0.01)
        return real_digest(fd, size)

    monkeypatch.setattr(h5py, "File", SlowFile)
    monkeypatch.setattr(lmdb_store, "tree_digest", slow_digest)
    for fmt in ("hdf5", "lmdb"):
        storage.write(tmp_path / fmt, BIG_RECS, format=fmt)
        ds = storage.StoreDataset(tmp_path / fmt, check=False)
        assert _eight_threads(ds, BIG_RECS, reads=5) == [], fmt


def test_in_memory_store_never_allocates_more_than_its_files_hold(tmp_path):
    from .support import edit_manifest

    storage.write(tmp_path / "s", RECS, "lmdb")

    def huge(m):
        m["records"][0][1] = 2**42  # 4 TiB claimed by a manifest with a valid digest

    edit_manifest(tmp_path / "s", huge, redigest=True)
    with pytest.raises(CorruptRecordError, match=r"InMemoryStore: store 's': its manifest lists"):
        storage.InMemoryStore(tmp_path / "s")
