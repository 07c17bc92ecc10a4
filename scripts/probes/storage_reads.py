"""The storage probe's cases for reading: read_all, verify, info, recover, the datasets, memmaps.

Each case is ``(label, call(tmp), expect)``: ``expect`` is ``ERROR`` or a check of the result.
"""

from __future__ import annotations

import math
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scripts.probes import storage_stores as st
from scripts.probes.harness import ERROR, equals
from scripts.probes.storage_stores import RECS
from tricks_helpers import storage

Case = tuple[str, Callable[[Path], Any], Any]


def read_cases() -> list[Case]:
    """The cases of every reader of a store, and of ``write_memmap`` / ``MemmapDataset``."""
    c: list[Case] = []
    nan, inf = math.nan, math.inf
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
        c.append((f"{fname} .npy file", lambda t, f=fn: f(st.npy(t)), ERROR))
        for fmt in ("lmdb", "hdf5", "tar"):
            if fname == "info":  # info reads the manifest only: damage in a payload is not its job
                continue
            c.append(
                (f"{fname} damaged {fmt}", lambda t, f=fn, m=fmt: list(f(st.damaged(t, m))), ERROR)
            )
    c.append(
        (
            "read_all via a symlink",
            lambda t: (t / "l").symlink_to(st.store(t)) or st.read_back(t / "l"),
            equals(RECS),
        )
    )
    for label, val in [("str", "no"), ("None", None), ("1", 1)]:
        c.append(
            (
                f"read_all check={label}",
                lambda t, v=val: list(storage.read_all(st.store(t), check=v)),
                ERROR,
            )
        )
    c.append(("recover missing", lambda t: storage.recover(t / "none"), equals([])))
    c.append(
        (
            "recover a file",
            lambda t: (t / "f").write_bytes(b"x") and storage.recover(t / "f"),
            equals([]),
        )
    )
    c.append(("read_syscalls", lambda t: st.syscalls(), lambda got: got is True))
    # ---- datasets
    for cls in ("StoreDataset", "StoreIterableDataset", "InMemoryStore"):
        c.append((f"{cls} path=None", lambda t, k=cls: getattr(storage, k)(None), ERROR))
        c.append((f"{cls} missing", lambda t, k=cls: getattr(storage, k)(t / "none"), ERROR))
        c.append(
            (
                f"{cls} transform=3",
                lambda t, k=cls: getattr(storage, k)(st.store(t), transform=3),
                ERROR,
            )
        )
        c.append(
            (
                f"{cls} damaged lmdb",
                lambda t, k=cls: list(getattr(storage, k)(st.damaged(t))),
                ERROR,
            )
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
                    lambda t, k=cls, i=idx: getattr(storage, k)(st.store(t))[i],
                    ERROR,
                )
            )
    c.append(
        ("StoreDataset[-1]", lambda t: storage.StoreDataset(st.store(t))[-1], equals(RECS[-1]))
    )
    c.append(
        (
            "StoreDataset[np.int64(2)]",
            lambda t: storage.StoreDataset(st.store(t))[np.int64(2)],
            equals(RECS[2]),
        )
    )
    for fmt in storage.FORMATS:
        # its own generation to the end, or StoreReplacedError: never the new records
        c.append(
            (f"StoreDataset replaced {fmt}", lambda t, f=fmt: st.read_replaced(t, f), equals(RECS))
        )
    c.append(
        ("StoreDataset check='no'", lambda t: storage.StoreDataset(st.store(t), check="no"), ERROR)
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
                    lambda t, n=name, v=val: storage.StoreIterableDataset(st.store(t), **{n: v}),
                    ERROR,
                )
            )
    for label, val in [("nan", nan), ("-1", -1), ("inf", inf), ("None", None)]:
        c.append(
            (
                f"set_epoch({label})",
                lambda t, v=val: storage.StoreIterableDataset(st.store(t)).set_epoch(v),
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
                lambda t, k=kw: st.shuffled(t, **k),
                st.same_keys,
            )
        )
    c.append(
        (
            "StoreIterableDataset of []",
            lambda t: list(storage.StoreIterableDataset(st.store(t, recs=[]))),
            equals([]),
        )
    )
    c.append(
        (
            "StoreDataset pickled round trip",
            lambda t: pickle.loads(pickle.dumps(storage.StoreDataset(st.store(t))))[3],
            equals(RECS[3]),
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
    c.append(("write_memmap exists", lambda t: wm(st.npy(t), arrs, 2, (2, 2)), ERROR))
    c.append(
        (
            "write_memmap ok",
            lambda t: np.load(wm(t / "a.npy", arrs, 2, (2, 2))).shape,
            equals((2, 2, 2)),
        )
    )
    md = storage.MemmapDataset
    c.append(("MemmapDataset path=None", lambda t: md(None), ERROR))
    c.append(("MemmapDataset missing", lambda t: md(t / "none.npy"), ERROR))
    c.append(("MemmapDataset a store", lambda t: md(st.store(t)), ERROR))
    c.append(
        (
            "MemmapDataset truncated",
            lambda t: (os.truncate(st.npy(t), 100), md(t / "a.npy"))[1][5],
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
            (
                f"MemmapDataset labels={label}",
                lambda t, lb=labels: md(st.npy(t), labels=lb)[0],
                ERROR,
            )
        )
    for label, idx in [
        ("nan", nan),
        ("8", 8),
        ("-9", -9),
        ("1.0", 1.0),
        ("None", None),
        ("2**70", 2**70),
    ]:
        c.append((f"MemmapDataset[{label}]", lambda t, i=idx: md(st.npy(t))[i], ERROR))
    c.append(("MemmapDataset[-1]", lambda t: int(md(st.npy(t))[-1][0, 0]), equals(7)))
    c.append(
        (
            "MemmapDataset labels np.int64",
            lambda t: md(st.npy(t), labels=np.arange(8))[3][1],
            lambda got: int(got) == 3,
        )
    )
    return c
