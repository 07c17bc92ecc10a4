"""The storage probe's cases for ``write``: paths, records, options (issue 24).

Each case is
``(label, call(tmp), expect)``: ``expect`` is ``ERROR`` or a check of the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scripts.probes import storage_stores as st
from scripts.probes.harness import ERROR, Raises, equals
from scripts.probes.storage_stores import RECS
from tricks_helpers import storage

Case = tuple[str, Callable[[Path], Any], Any]


def write_cases() -> list[Case]:
    """The cases of ``storage.write``: its paths, its records, its options."""
    c: list[Case] = []
    w = storage.write
    nan, inf = math.nan, math.inf
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
            lambda t: (t / "l").symlink_to(st.store(t)) or w(t / "l", RECS, overwrite=True),
            ERROR,
        )
    )
    c.append(
        (
            "write over a damaged store",  # it is ours (its manifest is intact): replaced
            lambda t: (w(st.damaged(t), RECS, "tar", overwrite=True), st.read_back(t / "s"))[1],
            equals(RECS),
        )
    )
    # ---- write: records
    for fmt in storage.FORMATS:
        c.append(
            (
                f"write [] {fmt}",
                lambda t, f=fmt: (w(t / "s", [], f), st.read_back(t / "s"))[1],
                equals([]),
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
                lambda t, r=recs, f=fmt: (w(t / "s", r, f), st.read_back(t / "s"))[1],
                equals(recs),
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
            lambda t: (w(t / "s", [("a/b", b"x")]), st.read_back(t / "s"))[1],
            equals([("a/b", b"x")]),
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
                st.read_back(t / "s"),
            )[1],
            equals([("a", bytes(range(4)))]),
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
            lambda t: (w(t / "s", RECS, "tar", shard_records=2**63), st.read_back(t / "s"))[1],
            equals(RECS),
        )
    )
    c.append(
        (
            "write tar shard_records=np.int64(3)",
            lambda t: (w(t / "s", RECS, "tar", shard_records=np.int64(3)), st.read_back(t / "s"))[
                1
            ],
            equals(RECS),
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
            lambda t: (w(t / "s", RECS, "lmdb", map_size=2**40), st.read_back(t / "s"))[1],
            equals(RECS),
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
    return c
