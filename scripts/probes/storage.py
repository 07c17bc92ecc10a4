"""Probe every public name of ``tricks_helpers.storage`` with odd inputs (issue 24).

Each case runs in a forked child process (so a signal or a hang cannot take the probe down)
with a fresh scratch folder, and is classed by what happened:

- ``correct``: it returned, and the result is right (the case says what right is);
- ``clear error``: it raised a documented type (TypeError, ValueError, IndexError,
  FileExistsError, StorageError and its subclasses) whose message names the function, the
  argument or the store;
- ``obscure``: it raised anything else, or a documented type with a raw message;
- ``silent wrong``: it returned where it should have refused, or returned a wrong result;
- ``crash``: the child died by a signal; ``hang``: it ran past the time limit.

Run: ``python -m scripts.probes.storage`` (prints one line per case, then the counts; exit
status 1 when any case is silent wrong, a crash or a hang). :func:`probe` returns the rows.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tricks_helpers import storage

CLASSES = ("clear error", "correct", "obscure", "silent wrong", "crash", "hang")
ERROR = "error"  # the case's right answer is an error
_DOCUMENTED = (TypeError, ValueError, IndexError, FileExistsError, storage.StorageError)
_CONTEXT = (
    "write",
    "read_all",
    "verify",
    "info",
    "recover",
    "Store",
    "InMemoryStore",
    "Memmap",
    "set_epoch",
    "store",
    "record",
    "index",
    "key",
    "path",
    "format",
)
RECS = [(f"c/{i:03d}", bytes([i]) * (i + 1)) for i in range(20)]


@dataclass(frozen=True)
class Raises:
    """The case's right answer is the caller's own exception ``exc``, passed through."""

    exc: type


def _shuffled(tmp: Path, epoch: int = 0, **kw: Any) -> list:
    ds = storage.StoreIterableDataset(_store(tmp), shuffle=True, **kw)
    ds.set_epoch(epoch)
    return [list(ds), list(ds)]


def _same_keys(got: list) -> bool:
    """Both passes hold every record once, in the same (seeded) order."""
    return got[0] == got[1] and sorted(got[0]) == RECS


def _store(tmp: Path, fmt: str = "lmdb", name: str = "s", recs=RECS) -> Path:
    opts = {"shard_records": 5} if fmt == "tar" else {}
    storage.write(tmp / name, recs, fmt, **opts)
    return tmp / name


def _npy(tmp: Path, n: int = 8) -> Path:
    arrays = [np.full((4, 4), i, np.uint8) for i in range(n)]
    return storage.write_memmap(tmp / "a.npy", arrays, n, (4, 4))


def _damaged(tmp: Path, fmt: str = "lmdb") -> Path:
    s = _store(tmp, fmt)
    payload = {"lmdb": "lmdb/data.mdb", "hdf5": "data.h5", "tar": "shard-00000.tar"}[fmt]
    data = bytearray((s / payload).read_bytes())
    data[len(data) // 3] ^= 0xFF
    (s / payload).write_bytes(bytes(data))
    return s


def _read_replaced(tmp: Path, fmt: str) -> list:
    s = _store(tmp, fmt)
    ds = storage.StoreDataset(s)
    got = [ds[0]]
    storage.write(s, [(k, v + b"!") for k, v in RECS], fmt, overwrite=True)
    return got + [ds[i] for i in range(1, len(ds))]


def _read_back(p: Path) -> list:
    return list(storage.read_all(p))


def _is(value: Any) -> Callable[[Any], bool]:
    return lambda got: got == value


def _cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """``(label, call(tmp), expect)``: ``expect`` is ERROR or a check of the result."""
    w = storage.write
    nan, inf = math.nan, math.inf
    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    # ---- write: paths
    for label, path in [("None", None), ("int", 3), ("bytes", b"s"), ("list", ["s"])]:
        c.append((f"write path={label}", lambda t, p=path: w(p, RECS), ERROR))
    c.append(
        ("write path is a file", lambda t: (t / "f").write_bytes(b"x") and w(t / "f", RECS), ERROR)
    )
    c.append(
        (
            "write path is a file, overwrite",
            lambda t: (t / "f").write_bytes(b"x") and w(t / "f", RECS, overwrite=True),
            ERROR,
        )
    )
    c.append(("write parent missing", lambda t: w(t / "no" / "s", RECS), ERROR))
    c.append(("write into an empty folder", lambda t: (t / "e").mkdir() or w(t / "e", RECS), ERROR))
    c.append(
        (
            "write over a symlink to a store",
            lambda t: (t / "l").symlink_to(_store(t)) or w(t / "l", RECS, overwrite=True),
            ERROR,
        )
    )
    c.append(
        (
            "write over a damaged store",  # it is ours (its manifest is intact): replaced
            lambda t: (w(_damaged(t), RECS, "tar", overwrite=True), _read_back(t / "s"))[1],
            _is(RECS),
        )
    )
    # ---- write: records
    for fmt in storage.FORMATS:
        c.append(
            (
                f"write [] {fmt}",
                lambda t, f=fmt: (w(t / "s", [], f), _read_back(t / "s"))[1],
                _is([]),
            )
        )
    for label, recs in [
        ("None", None),
        ("str", "ab"),
        ("int", 5),
        ("value str", [("a", "x")]),
        ("value int", [("a", 5)]),
        ("value None", [("a", None)]),
        ("value float nan", [("a", nan)]),
        ("value list", [("a", [1, 2])]),
        ("key bytes", [(b"a", b"x")]),
        ("key int", [(1, b"x")]),
        ("key None", [(None, b"x")]),
        ("key empty", [("", b"x")]),
        ("key NUL", [("a\x00b", b"x")]),
        ("key surrogate", [("\udc80", b"x")]),
        ("duplicate keys", [("a", b"1"), ("a", b"2")]),
        ("triple", [("a", b"1", b"2")]),
        ("single", [("a",)]),
        ("numpy 2-d array value", [("a", np.zeros((2, 3), np.uint8))]),
    ]:
        for fmt in ("folder", "lmdb"):
            c.append(
                (f"write records={label} {fmt}", lambda t, r=recs, f=fmt: w(t / "s", r, f), ERROR)
            )
    odd_keys = ["a/b", "..", "../x", "/abs", "a\\b", "k" * 100_000, "é/ü", " ", "a\nb"]
    for fmt in ("lmdb", "tar", "hdf5"):
        recs = [(k, k.encode()[:50]) for k in odd_keys]
        c.append(
            (
                f"write odd keys {fmt}",
                lambda t, r=recs, f=fmt: (w(t / "s", r, f), _read_back(t / "s"))[1],
                _is(recs),
            )
        )
    for key in ["..", "../x", "/abs", "a/", "k" * 300, storage.MANIFEST, "a\\b"]:
        c.append(
            (
                f"write folder key={key[:12]!r}",
                lambda t, k=key: w(t / "s", [(k, b"x")], "folder"),
                ERROR,
            )
        )
    c.append(
        (
            "write folder key 'a/b'",
            lambda t: (w(t / "s", [("a/b", b"x")]), _read_back(t / "s"))[1],
            _is([("a/b", b"x")]),
        )
    )
    c.append(
        (
            "write 4 MiB key lmdb",
            lambda t: w(t / "s", [("k" * 2**22, b"x")], "lmdb"),
            lambda got: got.count == 1,
        )
    )
    c.append(
        (
            "write numpy 1-d uint8 value",
            lambda t: (
                w(t / "s", [("a", np.arange(4, dtype=np.uint8))], "lmdb"),
                _read_back(t / "s"),
            )[1],
            _is([("a", bytes(range(4)))]),
        )
    )
    c.append(  # the caller's own error goes through unchanged, and nothing is left
        (
            "write generator raising",
            lambda t: w(t / "s", (1 / 0 for _ in range(1))),
            Raises(ZeroDivisionError),
        )
    )
    # ---- write: options
    for label, fmt in [
        ("None", None),
        ("int", 3),
        ("upper", "LMDB"),
        ("zip", "zip"),
        ("empty", ""),
    ]:
        c.append((f"write format={label}", lambda t, f=fmt: w(t / "s", RECS, f), ERROR))
    for label, val in [
        ("nan", nan),
        ("inf", inf),
        ("-1", -1),
        ("0", 0),
        ("True", True),
        ("1.0", 1.0),
        ("str", "5"),
    ]:
        c.append(
            (
                f"write tar shard_records={label}",
                lambda t, v=val: w(t / "s", RECS, "tar", shard_records=v),
                ERROR,
            )
        )
    c.append(  # more records per shard than records: one shard
        (
            "write tar shard_records=2**63",
            lambda t: (w(t / "s", RECS, "tar", shard_records=2**63), _read_back(t / "s"))[1],
            _is(RECS),
        )
    )
    c.append(
        (
            "write tar shard_records=np.int64(3)",
            lambda t: (w(t / "s", RECS, "tar", shard_records=np.int64(3)), _read_back(t / "s"))[1],
            _is(RECS),
        )
    )
    for label, val in [
        ("nan", nan),
        ("inf", inf),
        ("-1", -1),
        ("True", True),
        ("2**63-1", 2**63 - 1),
        ("10", 10),
    ]:
        c.append(
            (
                f"write lmdb map_size={label}",
                lambda t, v=val: w(t / "s", RECS, "lmdb", map_size=v),
                ERROR,
            )
        )
    c.append(
        (
            "write lmdb map_size=2**40",
            lambda t: (w(t / "s", RECS, "lmdb", map_size=2**40), _read_back(t / "s"))[1],
            _is(RECS),
        )
    )
    c.append(("write unknown option", lambda t: w(t / "s", RECS, "lmdb", shards=3), ERROR))
    for name in ("overwrite", "progress", "verify_after"):
        for label, val in [("str", "yes"), ("1", 1), ("nan", nan)]:
            c.append(
                (
                    f"write {name}={label}",
                    lambda t, n=name, v=val: w(t / "s", RECS, **{n: v}),
                    ERROR,
                )
            )
    # ---- read_all / verify / info / recover
    for fname in ("read_all", "verify", "info", "recover"):
        fn = getattr(storage, fname)
        for label, path in [("None", None), ("int", 1), ("nan", nan)]:
            c.append((f"{fname} path={label}", lambda t, f=fn, p=path: f(p), ERROR))
        if fname == "recover":
            continue
        c.append((f"{fname} missing", lambda t, f=fn: f(t / "none"), ERROR))
        c.append(
            (f"{fname} a file", lambda t, f=fn: (t / "f").write_bytes(b"x") and f(t / "f"), ERROR)
        )
        c.append((f"{fname} empty folder", lambda t, f=fn: (t / "e").mkdir() or f(t / "e"), ERROR))
        c.append(
            (
                f"{fname} broken symlink",
                lambda t, f=fn: (t / "l").symlink_to(t / "none") or f(t / "l"),
                ERROR,
            )
        )
        c.append((f"{fname} .npy file", lambda t, f=fn: f(_npy(t)), ERROR))
        for fmt in ("lmdb", "hdf5", "tar"):
            if fname == "info":  # info reads the manifest only: damage in a payload is not its job
                continue
            c.append(
                (f"{fname} damaged {fmt}", lambda t, f=fn, m=fmt: list(f(_damaged(t, m))), ERROR)
            )
    c.append(
        (
            "read_all via a symlink",
            lambda t: (t / "l").symlink_to(_store(t)) or _read_back(t / "l"),
            _is(RECS),
        )
    )
    for label, val in [("str", "no"), ("None", None), ("1", 1)]:
        c.append(
            (
                f"read_all check={label}",
                lambda t, v=val: list(storage.read_all(_store(t), check=v)),
                ERROR,
            )
        )
    c.append(("recover missing", lambda t: storage.recover(t / "none"), _is([])))
    c.append(
        (
            "recover a file",
            lambda t: (t / "f").write_bytes(b"x") and storage.recover(t / "f"),
            _is([]),
        )
    )
    c.append(("read_syscalls", lambda t: _syscalls(), lambda got: got is True))
    # ---- datasets
    for cls in ("StoreDataset", "StoreIterableDataset", "InMemoryStore"):
        c.append((f"{cls} path=None", lambda t, k=cls: getattr(storage, k)(None), ERROR))
        c.append((f"{cls} missing", lambda t, k=cls: getattr(storage, k)(t / "none"), ERROR))
        c.append(
            (
                f"{cls} transform=3",
                lambda t, k=cls: getattr(storage, k)(_store(t), transform=3),
                ERROR,
            )
        )
        c.append(
            (f"{cls} damaged lmdb", lambda t, k=cls: list(getattr(storage, k)(_damaged(t))), ERROR)
        )
    for label, idx in [
        ("nan", nan),
        ("inf", inf),
        ("1.0", 1.0),
        ("-21", -21),
        ("20", 20),
        ("2**70", 2**70),
        ("None", None),
        ("slice", slice(0, 2)),
        ("True", True),
        ("'1'", "1"),
    ]:
        for cls in ("StoreDataset", "InMemoryStore"):
            c.append(
                (
                    f"{cls}[{label}]",
                    lambda t, k=cls, i=idx: getattr(storage, k)(_store(t))[i],
                    ERROR,
                )
            )
    c.append(("StoreDataset[-1]", lambda t: storage.StoreDataset(_store(t))[-1], _is(RECS[-1])))
    c.append(
        (
            "StoreDataset[np.int64(2)]",
            lambda t: storage.StoreDataset(_store(t))[np.int64(2)],
            _is(RECS[2]),
        )
    )
    for fmt in storage.FORMATS:
        # its own generation to the end, or StoreReplacedError: never the new records
        c.append((f"StoreDataset replaced {fmt}", lambda t, f=fmt: _read_replaced(t, f), _is(RECS)))
    c.append(
        ("StoreDataset check='no'", lambda t: storage.StoreDataset(_store(t), check="no"), ERROR)
    )
    for name, vals in [
        ("shuffle_buffer", [("nan", nan), ("inf", inf), ("0", 0), ("-1", -1)]),
        ("seed", [("nan", nan), ("-1", -1), ("2**64", 2**64), ("1.5", 1.5)]),
        ("shuffle", [("1", 1), ("str", "yes")]),
        ("check", [("None", None)]),
    ]:
        for label, val in vals:
            c.append(
                (
                    f"StoreIterableDataset {name}={label}",
                    lambda t, n=name, v=val: storage.StoreIterableDataset(_store(t), **{n: v}),
                    ERROR,
                )
            )
    for label, val in [("nan", nan), ("-1", -1), ("inf", inf), ("None", None)]:
        c.append(
            (
                f"set_epoch({label})",
                lambda t, v=val: storage.StoreIterableDataset(_store(t)).set_epoch(v),
                ERROR,
            )
        )
    for label, kw in [
        ("2**63 buffer", {"shuffle_buffer": 2**63}),
        ("2**70 epoch", {"epoch": 2**70}),
    ]:
        c.append(
            (
                f"StoreIterableDataset shuffled, {label}",
                lambda t, k=kw: _shuffled(t, **k),
                _same_keys,
            )
        )
    c.append(
        (
            "StoreIterableDataset of []",
            lambda t: list(storage.StoreIterableDataset(_store(t, recs=[]))),
            _is([]),
        )
    )
    c.append(
        (
            "StoreDataset pickled round trip",
            lambda t: pickle.loads(pickle.dumps(storage.StoreDataset(_store(t))))[3],
            _is(RECS[3]),
        )
    )
    # ---- write_memmap / MemmapDataset
    wm = storage.write_memmap
    arrs = [np.zeros((2, 2), np.uint8)] * 2
    for label, count in [
        ("nan", nan),
        ("inf", inf),
        ("-1", -1),
        ("0", 0),
        ("True", True),
        ("2.0", 2.0),
        ("None", None),
    ]:
        c.append(
            (
                f"write_memmap count={label}",
                lambda t, n=count: wm(t / "a.npy", arrs, n, (2, 2)),
                ERROR,
            )
        )
    for label, shape in [
        ("()", ()),
        ("(-1,)", (-1,)),
        ("(2.5,)", (2.5,)),
        ("'3'", "3"),
        ("(nan,)", (nan,)),
        ("None", None),
        ("huge", (2**40, 2**40)),
        ("int 4", 4),
    ]:
        c.append(
            (f"write_memmap shape={label}", lambda t, s=shape: wm(t / "a.npy", arrs, 2, s), ERROR)
        )
    c.append(
        ("write_memmap 2**40 rows", lambda t: wm(t / "a.npy", iter(arrs), 2**40, (2, 2)), ERROR)
    )
    c.append(("write_memmap arrays=None", lambda t: wm(t / "a.npy", None, 2, (2, 2)), ERROR))
    c.append(
        (
            "write_memmap arrays of lists",
            lambda t: wm(t / "a.npy", [[[0, 0], [0, 0]]] * 2, 2, (2, 2)),
            ERROR,
        )
    )
    c.append(
        (
            "write_memmap float arrays",
            lambda t: wm(t / "a.npy", [np.zeros((2, 2))] * 2, 2, (2, 2)),
            ERROR,
        )
    )
    c.append(("write_memmap too few", lambda t: wm(t / "a.npy", arrs[:1], 2, (2, 2)), ERROR))
    c.append(("write_memmap not .npy", lambda t: wm(t / "a.bin", arrs, 2, (2, 2)), ERROR))
    c.append(
        (
            "write_memmap path a folder",
            lambda t: (t / "d.npy").mkdir() or wm(t / "d.npy", arrs, 2, (2, 2), overwrite=True),
            ERROR,
        )
    )
    c.append(("write_memmap path=None", lambda t: wm(None, arrs, 2, (2, 2)), ERROR))
    c.append(("write_memmap exists", lambda t: wm(_npy(t), arrs, 2, (2, 2)), ERROR))
    c.append(
        (
            "write_memmap ok",
            lambda t: np.load(wm(t / "a.npy", arrs, 2, (2, 2))).shape,
            _is((2, 2, 2)),
        )
    )
    md = storage.MemmapDataset
    c.append(("MemmapDataset path=None", lambda t: md(None), ERROR))
    c.append(("MemmapDataset missing", lambda t: md(t / "none.npy"), ERROR))
    c.append(("MemmapDataset a store", lambda t: md(_store(t)), ERROR))
    c.append(
        (
            "MemmapDataset truncated",
            lambda t: (os.truncate(_npy(t), 100), md(t / "a.npy"))[1][5],
            ERROR,
        )
    )
    for label, labels in [
        ("too few", [0, 1]),
        ("str", "abcdefgh"),
        ("floats nan", [nan] * 8),
        ("None items", [None] * 8),
        ("int 8", 8),
        ("2-d", np.zeros((8, 2), np.int64)),
    ]:
        c.append(
            (f"MemmapDataset labels={label}", lambda t, lb=labels: md(_npy(t), labels=lb)[0], ERROR)
        )
    for label, idx in [
        ("nan", nan),
        ("8", 8),
        ("-9", -9),
        ("1.0", 1.0),
        ("None", None),
        ("2**70", 2**70),
    ]:
        c.append((f"MemmapDataset[{label}]", lambda t, i=idx: md(_npy(t))[i], ERROR))
    c.append(("MemmapDataset[-1]", lambda t: int(md(_npy(t))[-1][0, 0]), _is(7)))
    c.append(
        (
            "MemmapDataset labels np.int64",
            lambda t: md(_npy(t), labels=np.arange(8))[3][1],
            lambda got: int(got) == 3,
        )
    )
    c += _untrusted_file_cases()
    return c


def _special(tmp: Path, fmt: str, make: Callable[[Path], Any], rel: str | None = None) -> Path:
    """A store whose payload file holding record 3 (or ``rel``) is replaced by ``make(path)``."""
    s = _store(tmp, fmt)
    rel = rel or {"folder": RECS[3][0], "lmdb": "lmdb/data.mdb", "hdf5": "data.h5"}.get(
        fmt, "shard-00000.tar"
    )
    (s / rel).unlink()
    make(s / rel)
    return s


def _threads(tmp: Path, fmt: str, check: bool) -> list:
    """Eight threads sharing one dataset, 100 random reads each: the reads that went wrong."""
    import threading

    s = _store(tmp, fmt, recs=_BIG_RECS)
    ds = storage.StoreDataset(s, check=check)
    wrong: list = []

    def reader(seed: int) -> None:
        for i in np.random.default_rng(seed).integers(0, len(_BIG_RECS), 100):
            try:
                if ds[int(i)] != _BIG_RECS[int(i)]:
                    wrong.append(int(i))
            except Exception as exc:
                wrong.append(type(exc).__name__)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=reader, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    return wrong


_BIG_RECS = [(f"c/{i:03d}", bytes([i]) * (20000 + 997 * i)) for i in range(20)]


def _in_memory_replaced(tmp: Path) -> Any:
    from tricks_helpers.storage import arrays

    s = _store(tmp)
    real = arrays.open_store

    def open_then_rewrite(path, where):
        store = real(path, where)
        storage.write(s, [(k + "x", v + b"!") for k, v in RECS], "lmdb", overwrite=True)
        return store

    arrays.open_store = open_then_rewrite
    try:
        ds = storage.InMemoryStore(s)
        return [ds[i] for i in range(len(ds))]
    finally:
        arrays.open_store = real


def _untrusted_file_cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """Issue 32: FIFOs, links to devices or outside the store, grown files, threads."""
    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    ds, it = storage.StoreDataset, storage.StoreIterableDataset
    for fmt in storage.FORMATS:
        for check in (True, False):
            c.append(
                (
                    f"StoreDataset {fmt} check={check}: payload a FIFO",
                    lambda t, f=fmt, k=check: ds(_special(t, f, os.mkfifo), check=k)[3],
                    ERROR,
                )
            )
            for dev in ("/dev/zero", "/dev/urandom"):
                c.append(
                    (
                        f"StoreDataset {fmt} check={check}: payload -> {dev}",
                        lambda t, f=fmt, k=check, d=dev: ds(
                            _special(t, f, lambda p, d=d: p.symlink_to(d)), check=k
                        )[3],
                        ERROR,
                    )
                )
        c.append(
            (
                f"StoreIterableDataset {fmt}: payload a FIFO",
                lambda t, f=fmt: list(it(_special(t, f, os.mkfifo), check=False)),
                ERROR,
            )
        )
        c.append(
            (
                f"verify {fmt}: payload a FIFO",
                lambda t, f=fmt: storage.verify(_special(t, f, os.mkfifo)),
                ERROR,
            )
        )
        for check in (False, True):
            c.append(
                (
                    f"8 threads share a {fmt} dataset check={check}",
                    lambda t, f=fmt, k=check: _threads(t, f, k),
                    _is([]),
                )
            )

    def secret(p: Path) -> None:
        (p.parent.parent.parent / "secret").write_bytes(b"S" * len(RECS[3][1]))
        p.symlink_to(p.parent.parent.parent / "secret")

    for check in (True, False):
        c.append(
            (
                f"folder record -> a file outside, check={check}",
                lambda t, k=check: ds(_special(t, "folder", secret), check=k)[3],
                ERROR,
            )
        )

    def class_folder_outside(t: Path) -> Any:
        s = _store(t, "folder")
        (s / "c").rename(t / "outside")
        (s / "c").symlink_to(t / "outside")
        return ds(s, check=False)[3]

    c.append(("folder class folder -> outside, check=False", class_folder_outside, ERROR))

    def grown(t: Path, fmt: str) -> Any:
        s = _store(t, fmt)
        rel = RECS[3][0] if fmt == "folder" else "shard-00000.tar"
        (s / rel).write_bytes(b"\0" * 2**20 + (s / rel).read_bytes())
        return ds(s, check=False)[3]

    for fmt in ("folder", "tar"):
        c.append((f"{fmt} payload grown by 1 MB, check=False", lambda t, f=fmt: grown(t, f), ERROR))
    c.append(("InMemoryStore: store rewritten while loading", _in_memory_replaced, ERROR))

    def claims_4_tib(t: Path) -> Any:
        from tricks_helpers.storage import manifest

        s = _store(t)
        m = json.loads((s / storage.MANIFEST).read_text(encoding="utf-8"))
        m.pop("digest")
        m["records"][0][1] = 2**42  # a crafted manifest: its digest is recomputed
        (s / storage.MANIFEST).write_bytes(manifest.manifest_bytes(m))
        return len(storage.InMemoryStore(s))

    c.append(("InMemoryStore: manifest claims 4 TiB", claims_4_tib, ERROR))
    md = storage.MemmapDataset
    c.append(
        ("MemmapDataset path a FIFO", lambda t: os.mkfifo(t / "f.npy") or md(t / "f.npy"), ERROR)
    )
    c.append(
        (
            "MemmapDataset path -> /dev/zero",
            lambda t: (t / "z.npy").symlink_to("/dev/zero") or md(t / "z.npy"),
            ERROR,
        )
    )

    def npy_becomes_fifo(t: Path) -> Any:
        d = md(_npy(t))
        (t / "a.npy").unlink()
        os.mkfifo(t / "a.npy")
        return d[0]

    c.append(("MemmapDataset file replaced by a FIFO", npy_becomes_fifo, ERROR))
    return c


def _syscalls() -> bool:
    with storage.read_syscalls() as calls:
        pass
    return calls.calls in (0, None)


def _classify_outcome(
    run: Callable[[], Any],
    expect: Any,
    documented: tuple[type, ...] = _DOCUMENTED,
    context: tuple[str, ...] = _CONTEXT,
) -> tuple[str, str]:
    try:
        got = run()
        if isinstance(got, Iterator):
            got = list(got)  # an iterator: its errors come when consumed
    except BaseException as exc:
        if isinstance(expect, Raises) and type(exc) is expect.exc:
            return "correct", f"{type(exc).__name__} passed through"
        if not isinstance(exc, documented):
            return "obscure", f"{type(exc).__module__}.{type(exc).__name__}: {str(exc)[:150]}"
        msg = str(exc)
        raw = not msg or msg.startswith("[Errno") or not any(w in msg for w in context)
        return ("obscure" if raw else "clear error"), f"{type(exc).__name__}: {msg[:150]}"
    if expect is ERROR or isinstance(expect, Raises):
        return "silent wrong", f"returned {got!r}"[:160]
    try:
        ok = bool(expect(got))
    except Exception as exc:  # the check itself failed: the result is not what it should be
        return "silent wrong", f"result check raised {exc!r}"[:160]
    return ("correct" if ok else "silent wrong"), ("" if ok else f"returned {got!r}"[:160])


def _run_case(
    call: Callable[[Path], Any], expect: Any, timeout: float, classify: Callable = _classify_outcome
) -> tuple[str, str]:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the case, send its class
        os.close(read)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                outcome = classify(lambda: call(Path(tmp)), expect)
            os.write(write, json.dumps(outcome).encode())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return "hang", f"still running after {timeout:.0f} s"
        time.sleep(0.005)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    if os.WIFSIGNALED(status):
        return "crash", f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    if not data:
        return "crash", f"exit status {os.WEXITSTATUS(status)} without a result"
    kind, detail = json.loads(data)
    return kind, detail


def probe(timeout: float = 30.0, only: str | None = None) -> list[tuple[str, str, str]]:
    """Run every case (those whose label contains ``only``); ``[(label, class, detail)]``."""
    import torch  # noqa: F401  (imported once here, not in every child)

    rows = []
    for label, call, expect in _cases():
        if only is None or only in label:
            rows.append((label, *_run_case(call, expect, timeout)))
    return rows


def main(argv: list[str]) -> int:
    only = argv[1] if len(argv) > 1 else None
    rows = probe(only=only)
    for label, kind, detail in rows:
        print(f"{kind:12s} | {label:45s} | {detail}")
    counts = Counter(kind for _, kind, _ in rows)
    print("counts: " + ", ".join(f"{k} {counts.get(k, 0)}" for k in CLASSES) + f" (of {len(rows)})")
    return 1 if any(counts.get(k) for k in ("silent wrong", "crash", "hang")) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
