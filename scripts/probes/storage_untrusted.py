"""The storage probe's untrusted-file cases (issue 32): FIFOs, links to devices or outside the
store, grown files, a store rewritten while read, eight threads sharing a dataset.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scripts.probes import storage_stores as st
from scripts.probes.harness import ERROR, equals
from scripts.probes.storage_stores import RECS
from tricks_helpers import storage

Case = tuple[str, Callable[[Path], Any], Any]


def _threads(tmp: Path, fmt: str, check: bool) -> list:
    """Eight threads sharing one dataset, 100 random reads each: the reads that went wrong."""
    import threading

    s = st.store(tmp, fmt, recs=_BIG_RECS)
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

    s = st.store(tmp)
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


def untrusted_file_cases() -> list[Case]:
    """Issue 32: FIFOs, links to devices or outside the store, grown files, threads."""
    c: list[Case] = []
    ds, it = storage.StoreDataset, storage.StoreIterableDataset
    for fmt in storage.FORMATS:
        for check in (True, False):
            c.append(
                (
                    f"StoreDataset {fmt} check={check}: payload a FIFO",
                    lambda t, f=fmt, k=check: ds(st.special(t, f, os.mkfifo), check=k)[3],
                    ERROR,
                )
            )
            for dev in ("/dev/zero", "/dev/urandom"):
                c.append(
                    (
                        f"StoreDataset {fmt} check={check}: payload -> {dev}",
                        lambda t, f=fmt, k=check, d=dev: ds(
                            st.special(t, f, lambda p, d=d: p.symlink_to(d)), check=k
                        )[3],
                        ERROR,
                    )
                )
        c.append(
            (
                f"StoreIterableDataset {fmt}: payload a FIFO",
                lambda t, f=fmt: list(it(st.special(t, f, os.mkfifo), check=False)),
                ERROR,
            )
        )
        c.append(
            (
                f"verify {fmt}: payload a FIFO",
                lambda t, f=fmt: storage.verify(st.special(t, f, os.mkfifo)),
                ERROR,
            )
        )
        for check in (False, True):
            c.append(
                (
                    f"8 threads share a {fmt} dataset check={check}",
                    lambda t, f=fmt, k=check: _threads(t, f, k),
                    equals([]),
                )
            )

    def secret(p: Path) -> None:
        (p.parent.parent.parent / "secret").write_bytes(b"S" * len(RECS[3][1]))
        p.symlink_to(p.parent.parent.parent / "secret")

    for check in (True, False):
        c.append(
            (
                f"folder record -> a file outside, check={check}",
                lambda t, k=check: ds(st.special(t, "folder", secret), check=k)[3],
                ERROR,
            )
        )

    def class_folder_outside(t: Path) -> Any:
        s = st.store(t, "folder")
        (s / "c").rename(t / "outside")
        (s / "c").symlink_to(t / "outside")
        return ds(s, check=False)[3]

    c.append(("folder class folder -> outside, check=False", class_folder_outside, ERROR))

    def grown(t: Path, fmt: str) -> Any:
        s = st.store(t, fmt)
        rel = RECS[3][0] if fmt == "folder" else "shard-00000.tar"
        (s / rel).write_bytes(b"\0" * 2**20 + (s / rel).read_bytes())
        return ds(s, check=False)[3]

    for fmt in ("folder", "tar"):
        c.append((f"{fmt} payload grown by 1 MB, check=False", lambda t, f=fmt: grown(t, f), ERROR))
    c.append(("InMemoryStore: store rewritten while loading", _in_memory_replaced, ERROR))

    def claims_4_tib(t: Path) -> Any:
        from tricks_helpers.storage import manifest

        s = st.store(t)
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
        d = md(st.npy(t))
        (t / "a.npy").unlink()
        os.mkfifo(t / "a.npy")
        return d[0]

    c.append(("MemmapDataset file replaced by a FIFO", npy_becomes_fifo, ERROR))
    return c
