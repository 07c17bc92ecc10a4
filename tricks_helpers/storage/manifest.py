"""A store's manifest: its format, its digest and its field checks (introduced in chapter 03).

Every store is a directory holding its payload files and one JSON manifest, :data:`MANIFEST`.
The manifest names the format, lists every record as ``[key, size, sha256, *where]`` in write
order, every payload file as ``{relative path: [size, sha256]}``, and ends with a ``digest``:
the SHA-256 of the canonical JSON of everything else. So:

- a manifest that was edited or damaged after it was written (a flipped bit in a key, an
  offset off by one) fails its digest: :class:`CorruptRecordError`, never a wrong answer;
- even a manifest with a valid digest is checked field by field before any file is opened:
  keys are non-empty text, sizes and offsets are integers in range, tar offsets are
  block-aligned and increasing, no path leaves the store (``../x`` is refused);
- payload files are hashed whole before LMDB or HDF5 parses them (see
  :mod:`tricks_helpers.storage.reading`), so a damaged file never reaches a C library.

Opening a store (its directory held by a descriptor, its generation pinned) is
:mod:`tricks_helpers.storage.store`.

This module imports neither torch nor a format library. Error messages name stores by their
base name only (never a full machine path).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tricks_helpers._checks import check_type

__all__ = [
    "FORMATS",
    "MANIFEST",
    "VERSION",
    "StorageError",
    "CorruptRecordError",
    "TruncatedStoreError",
    "StoreReplacedError",
    "StorageWarning",
    "StoreInfo",
    "new_generation",
    "sha256",
    "check_key",
    "check_folder_key",
    "manifest_bytes",
    "parse_manifest",
    "validate",
    "as_path",
]

#: The formats :func:`tricks_helpers.storage.write` accepts.
FORMATS = ("folder", "lmdb", "tar", "hdf5")
#: Name of the manifest file inside every store directory (a reserved key in ``"folder"``).
MANIFEST = "_store.json"
#: Manifest version written and read by this module (3: a ``generation`` per write).
VERSION = 3
#: Payload files of the single-file formats (relative to the store).
SINGLE_FILE = {"lmdb": "lmdb/data.mdb", "hdf5": "data.h5"}
TAR_BLOCK = 512
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX32 = re.compile(r"[0-9a-f]{32}")
_SHARD = re.compile(r"shard-\d{5}\.tar")
_WHERE = {"folder": 0, "lmdb": 0, "hdf5": 0, "tar": 2}  # extra fields per record row


class StorageError(Exception):
    """A store is missing, unreadable or not what the caller asked for."""


class CorruptRecordError(StorageError):
    """Stored bytes differ from what was written: ``.index``/``.key`` name the first bad
    record where one can be named (``None`` for a damaged manifest or a damaged file)."""

    def __init__(self, message: str, index: int | None = None, key: str | None = None):
        super().__init__(message)
        self.index = index
        self.key = key


class TruncatedStoreError(CorruptRecordError):
    """A payload file is shorter or longer than recorded, or missing."""


class StoreReplacedError(StorageError):
    """The store was replaced (written again) while it was being read: a reader never mixes
    records of two generations, nor reports a healthy new store as damaged."""


class StorageWarning(UserWarning):
    """Something was left on disk that could not be removed (the message says what, where)."""


@dataclass(frozen=True)
class StoreInfo:
    """What a store holds, read from its manifest."""

    name: str
    format: str
    count: int
    total_bytes: int

    def __str__(self) -> str:
        return f"{self.name}: {self.format}, {self.count} records, {self.total_bytes} bytes"


def as_path(where: str, path: Any) -> Path:
    """``path`` as a :class:`~pathlib.Path` (TypeError for anything but str/PathLike)."""
    check_type(where, "path", path, (str, os.PathLike))
    return Path(path)


def sha256(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def check_key(key: Any, index: int) -> str:
    """A record key: non-empty text without NUL, encodable as UTF-8."""
    if not isinstance(key, str):
        raise TypeError(f"record {index}: key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError(f"record {index}: empty key")
    if "\x00" in key:
        raise ValueError(f"record {index}: key {key!r} contains a NUL character")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"record {index}: key {key!r} is not valid UTF-8 text ({exc.reason})"
        ) from None
    return key


def _unsafe_path(rel: str) -> str | None:
    """Why ``rel`` is not a safe relative path inside a store, or None."""
    parts = rel.split("/")
    if rel.startswith("/"):
        return "it is an absolute path"
    if "\\" in rel:
        return "it contains a backslash (a path separator on Windows)"
    if any(p in ("", ".", "..") for p in parts):
        return "it has an empty, '.' or '..' path component"
    if any(len(p.encode("utf-8")) > 255 for p in parts):
        return "a path component is longer than 255 bytes"
    if rel == MANIFEST:
        return f"{MANIFEST!r} is the store's manifest"
    return None


def check_folder_key(key: str, index: int) -> tuple[str, ...]:
    """Refuse keys that are unsafe or ambiguous as relative file paths ('folder' format)."""
    why = _unsafe_path(key)
    if why:
        raise ValueError(
            f"record {index}: key {key!r} is not safe as a file name in the "
            f"'folder' format: {why}. Use simple relative paths such as "
            f"'cat/0001.jpg', or another format (lmdb, tar, hdf5 accept any key)."
        )
    return tuple(key.split("/"))


def _canonical(body: dict) -> bytes:
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8"
    )


def manifest_bytes(body: dict) -> bytes:
    """The manifest file's content for ``body``: canonical JSON plus its ``digest``."""
    return _canonical({**body, "digest": sha256(_canonical(body))})


def _bad(name: str, why: str, index: int | None = None, key: str | None = None):
    return CorruptRecordError(f"store {name!r}: manifest {MANIFEST} is damaged: {why}", index, key)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def validate(name: str, m: dict) -> None:
    """Field-by-field checks of a manifest whose digest matched (see the module docstring).

    Raises:
        CorruptRecordError: naming the first bad field (and record, where there is one).
    """
    fmt, records, files = m.get("format"), m.get("records"), m.get("files")
    if fmt not in FORMATS or not isinstance(records, list) or not isinstance(files, dict):
        raise _bad(name, "format, records or files missing")
    if not (isinstance(m.get("generation"), str) and _HEX32.fullmatch(m["generation"])):
        raise _bad(name, "generation missing or malformed")
    if fmt == "lmdb" and not (
        isinstance(m.get("lmdb_tree"), str) and _HEX64.fullmatch(m["lmdb_tree"])
    ):
        raise _bad(name, "lmdb_tree digest missing or malformed")
    if m.get("count") != len(records):
        raise _bad(name, f"count {m.get('count')!r} but {len(records)} records listed")
    for rel, entry in files.items():
        if _unsafe_path(rel) or not (
            isinstance(entry, list)
            and len(entry) == 2
            and _int(entry[0])
            and isinstance(entry[1], str)
            and _HEX64.fullmatch(entry[1])
        ):
            raise _bad(name, f"bad file entry {rel!r}")
    shards = m.get("shards", [])
    if fmt == "tar" and not (
        isinstance(shards, list) and all(isinstance(s, str) and _SHARD.fullmatch(s) for s in shards)
    ):
        raise _bad(name, "bad shard list")
    expected = set(shards) if fmt == "tar" else {SINGLE_FILE[fmt]} if fmt in SINGLE_FILE else set()
    if set(files) != expected:
        raise _bad(name, f"payload files {sorted(files)} do not match the format {fmt!r}")
    seen: set[str] = set()
    end = [0] * len(shards)  # tar: first free byte after the previous record of each shard
    last_shard = 0
    for i, row in enumerate(records):
        ok = isinstance(row, list) and len(row) == 3 + _WHERE[fmt]
        key = row[0] if ok and isinstance(row[0], str) else None
        if not (
            ok
            and key
            and "\x00" not in key
            and key not in seen
            and _int(row[1])
            and isinstance(row[2], str)
            and _HEX64.fullmatch(row[2])
        ):
            raise _bad(name, f"record {i} is malformed or repeats a key", i, key)
        seen.add(key)
        if fmt == "folder" and _unsafe_path(key):
            raise _bad(name, f"record {i} key {key!r} is not a safe path in the store", i, key)
        if fmt == "tar":
            shard, offset = row[3], row[4]
            if not (
                _int(shard)
                and shard < len(shards)
                and shard >= last_shard
                and _int(offset)
                and offset % TAR_BLOCK == 0
                and offset >= end[shard] + TAR_BLOCK
            ):
                raise _bad(name, f"record {i} {key!r} has a bad shard or offset", i, key)
            last_shard, end[shard] = shard, offset + row[1]


def new_generation() -> str:
    """A fresh random generation id for a manifest (32 hex digits)."""
    return uuid.uuid4().hex


def parse_manifest(data: bytes, name: str) -> dict:
    """The manifest body in ``data`` (the file's bytes), its digest checked (not its fields).

    Raises:
        CorruptRecordError: ``data`` is not a manifest, or fails its digest.
    """
    try:
        m = json.loads(data.decode("utf-8"))
        digest = m.pop("digest")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _bad(name, f"unreadable ({type(exc).__name__})") from None
    if not isinstance(digest, str) or sha256(_canonical(m)) != digest:
        raise _bad(name, "it fails its digest (changed after it was written)")
    return m
