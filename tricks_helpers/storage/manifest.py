"""A store's manifest and the checks every reader relies on (introduced in chapter 03).

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

This module imports neither torch nor a format library. Error messages name stores by their
base name only (never a full machine path).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tricks_helpers._checks import check_int, check_type
from tricks_helpers.storage._files import identity

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
    "Store",
    "open_store",
    "is_store",
    "new_generation",
    "info",
    "sha256",
    "check_key",
    "check_folder_key",
    "manifest_bytes",
    "as_path",
    "checked",
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
_PROC_FD = "/proc/self/fd"
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


def _validate(name: str, m: dict) -> None:
    """Field-by-field checks of a manifest whose digest matched."""
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


class Store:
    """A store's checked manifest and its directory, held open (opens no payload file).

    The directory is held by a file descriptor from :func:`open_store` on: every payload file
    is opened through it, so a reader reads the generation whose manifest it holds even when
    the store is written again at the same path (:func:`tricks_helpers.storage.write` swaps
    directories). A copy sent to another process by pickling opens the directory again and
    checks the manifest's ``generation``: :class:`StoreReplacedError` where it changed. A copy
    made by ``fork`` shares the descriptor, so it reads the same generation.
    """

    def __init__(self, path: Path, manifest: dict, fd: int):
        self.path, self.manifest = path, manifest
        self.name = path.name
        self.format: str = manifest["format"]
        self.generation: str = manifest["generation"]
        self.records: list[list] = manifest["records"]
        self.keys: list[str] = [r[0] for r in self.records]
        self.files: dict[str, list] = manifest["files"]
        self._set_fd(fd)

    def _set_fd(self, fd: int | None) -> None:
        self._fd = fd
        if fd is not None:
            self._finalizer = weakref.finalize(self, os.close, fd)

    @property
    def fd(self) -> int:
        """The store directory's descriptor (opened again, and checked, after unpickling)."""
        if self._fd is None:
            fd, manifest = _open_dir(self.path, "storage")
            if manifest.get("generation") != self.generation:
                os.close(fd)
                raise self.replaced_error()
            self._set_fd(fd)
        return self._fd

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("_fd", "_finalizer")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fd = None

    def open(self, rel: str) -> BinaryIO:
        """Payload file ``rel`` of this generation, opened for reading (unbuffered)."""
        return open(rel, "rb", buffering=0, opener=lambda n, fl: os.open(n, fl, dir_fd=self.fd))

    def stat(self, rel: str) -> os.stat_result | None:
        """``os.stat`` of payload file ``rel`` of this generation, None where it is missing."""
        try:
            st = os.stat(rel, dir_fd=self.fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return st if stat.S_ISREG(st.st_mode) else None

    def file_path(self, rel: str) -> str:
        """A path to ``rel`` of this generation for libraries that open by name (LMDB, HDF5):
        through ``/proc/self/fd`` where the OS has it, else the store's path."""
        if os.path.isdir(_PROC_FD):
            return f"{_PROC_FD}/{self.fd}/{rel}"
        return str(self.path / rel)

    def replaced(self) -> bool:
        """Whether ``path`` now holds another generation (or nothing) than this one."""
        try:
            if identity(os.stat(self.path)) == identity(os.fstat(self.fd)):
                return False
            fd, manifest = _open_dir(self.path, "storage")
            os.close(fd)
        except (OSError, StorageError):
            return True
        return manifest.get("generation") != self.generation

    def replaced_error(self) -> StoreReplacedError:
        return StoreReplacedError(
            f"store {self.name!r} was replaced while reading (written again at the same "
            f"path); open it again to read the new version"
        )

    def __len__(self) -> int:
        return len(self.records)

    def position(self, where: str, index: Any) -> int:
        """``index`` (any integer type; negative counts from the end) as a position."""
        index = check_int(where, "index", index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"{where}: index {index} out of range for {len(self)} records")
        return index % len(self)

    def shard_members(self) -> list[list[int]]:
        """Record indices per tar shard, in order (one linear pass; ``[]`` for other formats)."""
        members: list[list[int]] = [[] for _ in self.manifest.get("shards", [])]
        if self.format == "tar":
            for i, row in enumerate(self.records):
                members[row[3]].append(i)
        return members

    def info(self) -> StoreInfo:
        return StoreInfo(self.name, self.format, len(self), sum(r[1] for r in self.records))


def _read_manifest(fd: int, name: str) -> dict:
    """The manifest in directory ``fd``, its digest checked (not its fields)."""
    try:
        mfd = os.open(MANIFEST, os.O_RDONLY, dir_fd=fd)
        with open(mfd, "rb") as f:
            m = json.loads(f.read().decode("utf-8"))
        digest = m.pop("digest")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise _bad(name, f"unreadable ({type(exc).__name__})") from None
    if not isinstance(digest, str) or sha256(_canonical(m)) != digest:
        raise _bad(name, "it fails its digest (changed after it was written)")
    return m


def _open_dir(path: Path, where: str) -> tuple[int, dict]:
    """A descriptor of the store directory ``path`` and its digest-checked manifest."""
    not_store = StorageError(
        f"{where}: {path.name!r} is not a store written by "
        f"tricks_helpers.storage (no {MANIFEST} manifest)"
    )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        raise StorageError(f"{where}: no store at {path.name!r}") from None
    except NotADirectoryError:
        raise not_store from None
    try:
        try:
            is_file = stat.S_ISREG(os.stat(MANIFEST, dir_fd=fd).st_mode)
        except FileNotFoundError:
            is_file = False
        if not is_file:
            raise not_store
        return fd, _read_manifest(fd, path.name)
    except BaseException:
        os.close(fd)
        raise


def open_store(path: str | os.PathLike, where: str = "storage") -> Store:
    """Read and check a store's manifest, and hold its directory open (see :class:`Store`).

    Raises:
        TypeError: ``path`` is not a str or PathLike.
        StorageError: no store at ``path``, or a manifest version this module does not read.
        CorruptRecordError: the manifest is unreadable, fails its digest or a field check.
    """
    path = as_path(where, path)
    fd, m = _open_dir(path, where)
    try:
        if m.get("version") != VERSION:
            raise StorageError(
                f"{where}: {path.name!r} has manifest version {m.get('version')!r}; "
                f"this module reads version {VERSION}: write the store again"
            )
        _validate(path.name, m)
    except BaseException:
        os.close(fd)
        raise
    return Store(path, m, fd)


def is_store(path: Path) -> str | None:
    """Why the directory ``path`` is not a store this module wrote (None when it is one).

    A store is recognised by its manifest's content (a valid digest, a known format, a
    version, records and files), never by the name alone, and holds nothing but what its
    manifest lists: a user's folder that merely contains a file named :data:`MANIFEST`, or a
    store a user added files to, is not one.
    """
    try:
        fd, m = _open_dir(path, "write")
        os.close(fd)
    except StorageError as exc:
        return str(exc).split(": ", 1)[-1]
    records, files = m.get("records"), m.get("files")
    if not (
        m.get("format") in FORMATS
        and isinstance(m.get("version"), int)
        and isinstance(records, list)
        and isinstance(files, dict)
        and all(isinstance(r, list) and r and isinstance(r[0], str) for r in records)
    ):
        return "its manifest does not describe a store"
    mine = {MANIFEST} | {rel.split("/")[0] for rel in files}
    if m["format"] == "folder":
        mine |= {r[0].split("/")[0] for r in records}
    foreign = sorted(set(os.listdir(path)) - mine)
    if foreign:
        return f"it holds files its manifest does not list ({', '.join(map(repr, foreign[:3]))})"
    return None


def new_generation() -> str:
    """A fresh random generation id for a manifest (32 hex digits)."""
    return uuid.uuid4().hex


def checked(store: Store, index: int, value: bytes) -> bytes:
    """``value`` after checking it against record ``index``'s size and SHA-256.

    Raises:
        CorruptRecordError: naming the record, when either differs.
    """
    key, size, want = store.records[index][:3]
    where = f"store {store.name!r} ({store.format}): record {index} {key!r}"
    if len(value) != size:
        raise CorruptRecordError(f"{where} has {len(value)} bytes, expected {size}", index, key)
    got = sha256(value)
    if got != want:
        raise CorruptRecordError(
            f"{where} fails its checksum (sha256 {got[:12]}..., expected {want[:12]}...)",
            index,
            key,
        )
    return value


def info(path: str | os.PathLike) -> StoreInfo:
    """Read a store's manifest.

    Args:
        path: a store directory written by :func:`tricks_helpers.storage.write`.

    Returns:
        A :class:`StoreInfo` (format, record count, total value bytes).

    Raises:
        TypeError: ``path`` is not a str or PathLike.
        StorageError: ``path`` is not a readable store (:class:`CorruptRecordError` for a
            damaged manifest).
    """
    return open_store(path, "info").info()
