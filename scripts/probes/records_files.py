"""Cases of :mod:`scripts.probes.records`: files read or written where they may be odd.

The checkpoint reader (a FIFO, a link to ``/dev/zero``, a sparse 3 GiB file, a file grown by a
byte...), the one strict JSON reader (repeated keys, NaN, huge numbers, deep nesting, bad
UTF-8), three writers of one JSON file at once, and a store deleted while it is read.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from scripts.probes.harness import ERROR


def _checkpoint(t: Path) -> Path:
    from tricks_helpers import resume

    return resume.save_checkpoint(resume.new_run(0), t / "ck.pt")


def _load(t: Path, plant: Callable[[Path], Path]) -> Any:
    from tricks_helpers import resume

    return resume.load_checkpoint(plant(t))


def _fifo(t: Path, name: str) -> Path:
    os.mkfifo(t / name)
    return t / name


def _link(t: Path, name: str, target: str) -> Path:
    (t / name).symlink_to(target)
    return t / name


def _sparse(t: Path, name: str, size: int, head: bytes = b"") -> Path:
    with open(t / name, "wb") as f:
        f.write(head)
        f.truncate(size)
    return t / name


def _grown(t: Path) -> Path:
    path = _checkpoint(t)
    with open(path, "ab") as f:
        f.write(b"\0")
    return path


def _huge_valid_header(t: Path) -> Path:
    path = _checkpoint(t)
    with open(path, "r+b") as f:
        f.truncate(3 * 2**30)
    return path


def _text(t: Path, name: str, text: str | bytes) -> Path:
    path = t / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def _read_json(t: Path, plant: Callable[[Path], Path]) -> Any:
    from scripts.results import json_file

    return json_file.read_json(plant(t))


def _deleted_store(t: Path, fmt: str) -> str:
    from tricks_helpers import storage

    storage.write(t / "s", [(f"k{i}", bytes([i]) * 10) for i in range(5)], fmt)
    ds = storage.StoreDataset(t / "s")
    shutil.rmtree(t / "s")
    try:
        ds[1]
    except storage.StoreReplacedError as exc:
        return str(exc)
    return "no error"


def _concurrent(write: Callable[[Path, Any], Any], t: Path) -> int:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(60):
            try:
                write(t / "a.json", {"n": n, "i": i})
            except OSError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return len(errors)


def file_cases() -> list[tuple[str, Callable[[Path], Any], Any]]:
    """``(label, call(tmp), expect)``: ``expect`` is ERROR or a check of the result."""
    from scripts.results import json_file
    from tricks_helpers import ddp

    c: list[tuple[str, Callable[[Path], Any], Any]] = []
    add = c.append
    # ---- the checkpoint reader
    for name, plant in [
        ("a FIFO", lambda t: _fifo(t, "ck.pt")),
        ("a link to /dev/zero", lambda t: _link(t, "ck.pt", "/dev/zero")),
        ("a 3 GiB sparse file", lambda t: _sparse(t, "ck.pt", 3 * 2**30)),
        ("3 GiB, a valid header", _huge_valid_header),
        ("one byte longer than declared", _grown),
        ("empty", lambda t: _text(t, "ck.pt", b"")),
        ("a folder", lambda t: (t / "ck.pt").mkdir() or t / "ck.pt"),
        ("missing", lambda t: t / "ck.pt"),
        ("a JSON file", lambda t: _text(t, "ck.pt", "{}")),
        ("a link to a missing file", lambda t: _link(t, "ck.pt", str(t / "nothing"))),
    ]:
        add((f"load_checkpoint {name}", partial(_load, plant=plant), ERROR))
    add(("load_checkpoint a good file", partial(_load, plant=_checkpoint), lambda run: True))
    # ---- the one strict JSON reader
    for name, plant in [
        ("a repeated key", lambda t: _text(t, "a.json", '{"a": 1, "a": 2}')),
        ("NaN", lambda t: _text(t, "a.json", '{"a": NaN}')),
        ("-Infinity", lambda t: _text(t, "a.json", "[-Infinity]")),
        ("a 5000-digit integer", lambda t: _text(t, "a.json", "9" * 5000)),
        ("a 5000-digit float", lambda t: _text(t, "a.json", "0." + "1" * 5000)),
        ("nesting 100,000 deep", lambda t: _text(t, "a.json", "[" * 10**5 + "]" * 10**5)),
        ("nesting 50 deep", lambda t: _text(t, "a.json", "[" * 50 + "]" * 50)),
        ("bad UTF-8", lambda t: _text(t, "a.json", b'{"a": "\xff"}')),
        ("a byte-order mark", lambda t: _text(t, "a.json", "\ufeff{}")),
        ("a FIFO", lambda t: _fifo(t, "a.json")),
        ("a link to /dev/zero", lambda t: _link(t, "a.json", "/dev/zero")),
        ("20 MB sparse", lambda t: _sparse(t, "a.json", 20 * 2**20)),
        ("a folder", lambda t: (t / "a.json").mkdir() or t / "a.json"),
        ("missing", lambda t: t / "a.json"),
    ]:
        add((f"read_json {name}", partial(_read_json, plant=plant), ERROR))
    add(
        ("read_json good", partial(_read_json, plant=lambda t: _text(t, "a.json", "{}")), {}.__eq__)
    )
    add(("write_json 3 writers at once", partial(_concurrent, json_file.write_json), (0).__eq__))
    add(("ddp write_json 3 writers at once", partial(_concurrent, ddp.write_json), (0).__eq__))
    # ---- a store deleted while read
    for fmt in ("folder", "lmdb", "tar"):
        add(
            (
                f"deleted {fmt} store",
                partial(_deleted_store, fmt=fmt),
                lambda msg: "was deleted while reading" in msg,
            )
        )
    return c
