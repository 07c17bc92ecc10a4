"""Storage formats for training data: write, verify, read (introduced in chapter 03).

One public API over four on-disk formats of ``(key: str, value: bytes)`` records:

- ``"folder"``: one file per record, the way people keep images (``cat/0001.jpg``);
- ``"lmdb"``: one memory-mapped LMDB key-value file;
- ``"tar"``: tar shards, made to be streamed front to back by an ``IterableDataset``;
- ``"hdf5"``: one HDF5 file holding all values back to back plus their offsets.

Every store is a **directory** holding the payload and a small JSON manifest
(:data:`MANIFEST`) that names the format, and records every key, size and SHA-256 in write
order. The format of a store is detected from that manifest, so :func:`read_all`,
:func:`verify` and the datasets take only a path.

Guarantees:

- :func:`write` builds the store under a hidden temporary name next to ``path``, verifies
  what it wrote, and renames it into place only when complete: an interrupted write (an
  exception in the record generator, a full disk) leaves nothing under the final name.
- An existing ``path`` is never replaced unless ``overwrite=True``, and even then only if it
  is a store written by this module (a foreign directory is never deleted).
- :func:`read_all` yields every record exactly as written (bytes for bytes, in write order);
  :func:`verify` checks every checksum and raises :class:`CorruptRecordError` naming the first
  bad record, or :class:`TruncatedStoreError` naming the truncated file.
- :class:`StoreDataset` (map-style) opens its LMDB/HDF5/file handle lazily, once per process,
  so each DataLoader worker gets its own handle (handles are never shared across ``fork``).
- :class:`StoreIterableDataset` splits the records between DataLoader workers with no record
  lost or repeated: whole tar shards per worker when there are at least as many shards as
  workers, otherwise record by record.
- :func:`write_memmap` / :class:`MemmapDataset` hold pre-decoded ``uint8`` arrays in one
  ``.npy`` file read through ``numpy.memmap``; :class:`InMemoryStore` keeps a whole store's
  values in one contiguous numpy buffer (no per-record Python objects to copy into workers).

Error messages name stores by their base name only (never a full machine path).
Importing this module changes no global state.
"""

from __future__ import annotations

import hashlib

import json
import os
import shutil
import sys
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

__all__ = [
    "FORMATS", "MANIFEST", "StorageError", "CorruptRecordError", "TruncatedStoreError",
    "StoreInfo", "write", "read_all", "verify", "info", "StoreDataset", "StoreIterableDataset",
    "InMemoryStore", "write_memmap", "MemmapDataset",
]

#: The formats :func:`write` accepts.
FORMATS = ("folder", "lmdb", "tar", "hdf5")
#: Name of the manifest file inside every store directory (a reserved key in ``"folder"``).
MANIFEST = "_store.json"
_VERSION = 1
_LMDB_DIR = "lmdb"
_HDF5_FILE = "data.h5"
_TAR_PATTERN = "shard-{:05d}.tar"
_PAX_KEY = "TRICKS.key"
_PAX_SHA = "TRICKS.sha256"


class StorageError(Exception):
    """A store is missing, unreadable or not what the caller asked for."""


class CorruptRecordError(StorageError):
    """A record does not match its recorded checksum or size (``.index``, ``.key``)."""

    def __init__(self, message: str, index: int | None = None, key: str | None = None):
        super().__init__(message)
        self.index = index
        self.key = key


class TruncatedStoreError(CorruptRecordError):
    """A payload file is shorter than recorded, or a record is missing."""


@dataclass(frozen=True)
class StoreInfo:
    """What a store holds, read from its manifest."""

    name: str
    format: str
    count: int
    total_bytes: int

    def __str__(self) -> str:
        return f"{self.name}: {self.format}, {self.count} records, {self.total_bytes} bytes"


# --------------------------------------------------------------------------- keys, values


def _check_key(key: Any, index: int) -> str:
    if not isinstance(key, str):
        raise TypeError(f"record {index}: key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError(f"record {index}: empty key")
    if "\x00" in key:
        raise ValueError(f"record {index}: key {key!r} contains a NUL character")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"record {index}: key {key!r} is not valid UTF-8 text ({exc.reason})") from None
    return key


def _check_folder_key(key: str, index: int) -> tuple[str, ...]:
    """Refuse keys that are unsafe or ambiguous as relative file paths."""
    why = None
    parts = tuple(key.split("/"))
    if key.startswith("/"):
        why = "it is an absolute path"
    elif "\\" in key:
        why = "it contains a backslash (a path separator on Windows)"
    elif any(p in ("", ".", "..") for p in parts):
        why = "it has an empty, '.' or '..' path component"
    elif any(len(p.encode("utf-8")) > 255 for p in parts):
        why = "a path component is longer than 255 bytes"
    elif key == MANIFEST:
        why = f"{MANIFEST!r} is the store's manifest"
    if why:
        raise ValueError(f"record {index}: key {key!r} is not safe as a file name in the 'folder' "
                         f"format: {why}. Use simple relative paths such as 'cat/0001.jpg', "
                         f"or another format (lmdb, tar, hdf5 accept any key).")
    return parts


def _check_value(value: Any, index: int, key: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"record {index} {key!r}: value must be bytes, bytearray or memoryview, "
                    f"got {type(value).__name__}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- manifest


def _read_manifest(path: Path) -> dict:
    if not path.exists():
        raise StorageError(f"no store at {path.name!r}")
    mpath = path / MANIFEST
    if not path.is_dir() or not mpath.is_file():
        raise StorageError(f"{path.name!r} is not a store written by tricks_helpers.storage "
                           f"(no {MANIFEST} manifest)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
        fmt, count, records = manifest["format"], manifest["count"], manifest["records"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"{path.name!r}: manifest {MANIFEST} is unreadable or incomplete "
                           f"({type(exc).__name__})") from None
    if manifest.get("version") != _VERSION or fmt not in FORMATS:
        raise StorageError(f"{path.name!r}: unsupported manifest (version "
                           f"{manifest.get('version')!r}, format {fmt!r})")
    if count != len(records):
        raise StorageError(f"{path.name!r}: manifest says {count} records but lists {len(records)}")
    return manifest


def info(path: str | os.PathLike) -> StoreInfo:
    """Read a store's manifest.

    Args:
        path: a store directory written by :func:`write`.

    Returns:
        A :class:`StoreInfo` (format, record count, total value bytes).

    Raises:
        StorageError: if ``path`` is not a readable store.
    """
    path = Path(path)
    m = _read_manifest(path)
    return StoreInfo(path.name, m["format"], m["count"], sum(r[1] for r in m["records"]))


# --------------------------------------------------------------------------- writers


class _FolderWriter:
    def __init__(self, root: Path, **_: Any):
        self.root = root
        self.files: set[tuple[str, ...]] = set()
        self.dirs: set[tuple[str, ...]] = set()

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        parts = _check_folder_key(key, index)
        if parts in self.dirs or any(parts[:i] in self.files for i in range(1, len(parts))):
            raise ValueError(f"record {index}: key {key!r} clashes with another key used as a "
                             f"folder (or a folder with a file) in the 'folder' format")
        self.files.add(parts)
        self.dirs.update(parts[:i] for i in range(1, len(parts)))
        target = self.root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(value)
        return []

    def close(self) -> dict:
        return {}


class _LmdbWriter:
    _BATCH = 256

    def __init__(self, root: Path, map_size: int = 1 << 26, **_: Any):
        import lmdb

        self.lmdb = lmdb
        self.env = lmdb.open(str(root / _LMDB_DIR), map_size=map_size, subdir=True,
                             readahead=False, meminit=False, max_dbs=0)
        self.pending: list[tuple[bytes, bytes]] = []

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        self.pending.append((index.to_bytes(8, "big"), value))
        if len(self.pending) >= self._BATCH:
            self._flush()
        return []

    def _flush(self) -> None:
        while self.pending:
            try:
                with self.env.begin(write=True) as txn:
                    for k, v in self.pending:
                        txn.put(k, v)
                self.pending = []
            except self.lmdb.MapFullError:
                self.env.set_mapsize(self.env.info()["map_size"] * 2)

    def close(self) -> dict:
        self._flush()
        self.env.sync(True)
        self.env.close()
        return {}

    def abort(self) -> None:
        self.env.close()


def _tar_header(name: str, size: int, typeflag: bytes) -> bytes:
    """One 512-byte ustar header (the subset this module writes: regular files, pax records)."""
    if size >= 8**11:
        raise ValueError(f"tar: a value of {size} bytes is too large for a ustar member")
    h = bytearray(tarfile.BLOCKSIZE)
    h[0:100] = name.encode("ascii").ljust(100, b"\0")
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = f"{size:011o}".encode() + b"\0"
    h[136:148] = b"00000000000\0"
    h[148:156] = b" " * 8
    h[156:157] = typeflag
    h[257:265] = b"ustar\x0000"
    h[148:156] = f"{sum(h):06o}".encode() + b"\0 "
    return bytes(h)


def _pax_data(fields: dict[str, str]) -> bytes:
    out = b""
    for k, v in fields.items():
        body = f" {k}={v}\n".encode("utf-8")
        n = len(body) + 1
        while len(str(n)) + len(body) != n:
            n = len(str(n)) + len(body)
        out += str(n).encode() + body
    return out


def _parse_pax(data: bytes) -> dict[str, str] | None:
    """Parse pax records (``"<length> <key>=<value>\\n"``, values may hold newlines)."""
    out, pos = {}, 0
    try:
        while pos < len(data):
            space = data.index(b" ", pos)
            length = int(data[pos:space])
            record = data[space + 1:pos + length]
            if length <= 0 or pos + length > len(data) or not record.endswith(b"\n"):
                return None
            k, _, v = record[:-1].partition(b"=")
            out[k.decode("utf-8")] = v.decode("utf-8")
            pos += length
    except (ValueError, UnicodeDecodeError):
        return None
    return out


def _pad(size: int) -> bytes:
    return b"\0" * (-size % tarfile.BLOCKSIZE)


class _TarWriter:
    """Writes POSIX (pax) tar shards readable by any tar tool; each member is preceded by a
    pax record holding its key and SHA-256, so a shard verifies itself when streamed."""

    def __init__(self, root: Path, shard_records: int = 1000, **_: Any):
        if isinstance(shard_records, bool) or not isinstance(shard_records, int) or shard_records < 1:
            raise ValueError(f"shard_records must be an integer >= 1, got {shard_records!r}")
        self.root, self.shard_records = root, shard_records
        self.shards: list[str] = []
        self.f: Any = None
        self.in_shard = 0

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        if self.f is None or self.in_shard >= self.shard_records:
            self._close_shard()
            name = _TAR_PATTERN.format(len(self.shards))
            self.shards.append(name)
            self.f = open(self.root / name, "wb")
            self.in_shard = 0
        member = f"{index:09d}.bin"
        pax = _pax_data({_PAX_KEY: key, _PAX_SHA: sha})
        self.f.write(_tar_header(f"PaxHeaders/{member}", len(pax), tarfile.XHDTYPE) + pax + _pad(len(pax)))
        self.f.write(_tar_header(member, len(value), tarfile.REGTYPE))
        offset = self.f.tell()
        self.f.write(value)
        self.f.write(_pad(len(value)))
        self.in_shard += 1
        return [len(self.shards) - 1, offset]

    def _close_shard(self) -> None:
        if self.f is not None:
            self.f.write(b"\0" * (2 * tarfile.BLOCKSIZE))  # end-of-archive marker
            self.f.close()
            self.f = None

    def close(self) -> dict:
        self._close_shard()
        return {"shards": self.shards}

    def abort(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None


class _Hdf5Writer:
    _CHUNK = 1 << 20

    def __init__(self, root: Path, **_: Any):
        import h5py

        self.f = h5py.File(root / _HDF5_FILE, "w")
        self.values = self.f.create_dataset("values", shape=(0,), maxshape=(None,), dtype=np.uint8,
                                            chunks=(self._CHUNK,))
        self.offsets = [0]
        self.buf = bytearray()

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        self.buf += value
        self.offsets.append(self.offsets[-1] + len(value))
        if len(self.buf) >= self._CHUNK:
            self._flush()
        return []

    def _flush(self) -> None:
        if self.buf:
            start = self.values.shape[0]
            self.values.resize((start + len(self.buf),))
            self.values[start:] = np.frombuffer(bytes(self.buf), dtype=np.uint8)
            self.buf = bytearray()

    def close(self) -> dict:
        self._flush()
        self.f.create_dataset("offsets", data=np.asarray(self.offsets, dtype=np.int64))
        self.f.close()
        return {}

    def abort(self) -> None:
        self.f.close()


_WRITERS = {"folder": _FolderWriter, "lmdb": _LmdbWriter, "tar": _TarWriter, "hdf5": _Hdf5Writer}
_OPTIONS = {"folder": set(), "lmdb": {"map_size"}, "tar": {"shard_records"}, "hdf5": set()}


def _payload_sizes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_size
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != MANIFEST
            and p.name != "lock.mdb"}


def _progress(iterable: Iterable, total: int | None, enabled: bool | None, desc: str):
    if enabled is None:
        enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="rec")


def write(path: str | os.PathLike, records: Iterable[tuple[str, bytes]], format: str = "folder", *,
          overwrite: bool = False, progress: bool | None = None, verify_after: bool = True,
          **options: Any) -> StoreInfo:
    """Write ``(key, value)`` records to a new store at ``path``, atomically.

    The store is built under a hidden temporary name in the same folder, verified, then
    renamed to ``path``. If anything fails (including an exception raised by ``records``),
    the temporary directory is removed and nothing exists under ``path``.

    Args:
        path: the store directory to create.
        records: iterable of ``(key, value)``; ``key`` a non-empty str (unique), ``value``
            bytes-like (may be empty). In the ``"folder"`` format keys are relative paths:
            ``/`` makes sub-folders; absolute paths, ``..``, ``.``, empty components,
            backslashes and the manifest's name are refused.
        format: one of :data:`FORMATS`.
        overwrite: replace an existing store at ``path`` (never a directory this module did
            not write).
        progress: show a tqdm progress bar; ``None`` (default) shows it only when stderr is a
            terminal, so notebooks and tests stay quiet.
        verify_after: re-read the new store and check every checksum before renaming it.
        **options: format options: ``shard_records`` (tar, records per shard, default 1000),
            ``map_size`` (lmdb, initial map size in bytes; it grows as needed).

    Returns:
        A :class:`StoreInfo` of the new store.

    Raises:
        ValueError: unknown format or option, a bad or duplicate key.
        TypeError: a key that is not a str, a value that is not bytes-like.
        FileExistsError: ``path`` exists and ``overwrite`` is False.
        StorageError: ``overwrite=True`` but ``path`` is not a store; verification failed.
    """
    if format not in FORMATS:
        raise ValueError(f"write: unknown format {format!r}; expected one of {FORMATS}")
    unknown = set(options) - _OPTIONS[format]
    if unknown:
        raise ValueError(f"write: option(s) {sorted(unknown)} do not apply to format {format!r} "
                         f"(it accepts {sorted(_OPTIONS[format]) or 'none'})")
    path = Path(path)
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise FileExistsError(f"write: {path.name!r} already exists; pass overwrite=True to "
                                  f"replace it")
        _read_manifest(path)  # refuse to replace anything that is not a store
    if not path.parent.is_dir():
        raise StorageError(f"write: parent folder of {path.name!r} does not exist")
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:12]}"
    tmp.mkdir()
    writer = None
    try:
        writer = _WRITERS[format](tmp, **options)
        rows, seen = [], set()
        total = len(records) if hasattr(records, "__len__") else None
        for index, item in enumerate(_progress(records, total, progress, f"write {format}")):
            try:
                key, value = item
            except (TypeError, ValueError):
                raise TypeError(f"record {index}: expected a (key, value) pair, got "
                                f"{type(item).__name__}") from None
            key = _check_key(key, index)
            value = _check_value(value, index, key)
            if key in seen:
                raise ValueError(f"record {index}: duplicate key {key!r}")
            seen.add(key)
            sha = _sha256(value)
            rows.append([key, len(value), sha] + writer.add(index, key, value, sha))
        extra = writer.close()
        writer = None
        manifest = {"version": _VERSION, "format": format, "count": len(rows), "checksum": "sha256",
                    **extra, "files": _payload_sizes(tmp), "records": rows}
        (tmp / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
        if verify_after:
            verify(tmp)
        if path.exists():
            if not overwrite:
                raise FileExistsError(f"write: {path.name!r} appeared while writing; not replaced")
            old = path.parent / f".{path.name}.old-{uuid.uuid4().hex[:12]}"
            path.rename(old)
            tmp.rename(path)
            shutil.rmtree(old)
        else:
            tmp.rename(path)
    except BaseException:
        if writer is not None and hasattr(writer, "abort"):
            try:
                writer.abort()
            except Exception:  # the original error matters more
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return StoreInfo(path.name, format, len(rows), sum(r[1] for r in rows))


# --------------------------------------------------------------------------- readers


class _Reader:
    """Random access to one store's values by index (one instance per process)."""

    def __init__(self, root: Path, manifest: dict):
        self.root, self.m = root, manifest
        self.name = root.name
        self.records = manifest["records"]

    def get(self, index: int) -> bytes:  # pragma: no cover - overridden
        raise NotImplementedError

    def close(self) -> None:
        pass

    def check_sizes(self) -> None:
        """Raise TruncatedStoreError where a payload file is shorter/longer than recorded."""
        for rel, size in self.m.get("files", {}).items():
            p = self.root / rel
            actual = p.stat().st_size if p.is_file() else None
            if actual != size:
                first = self._first_record_in(rel)
                where = f"; first affected record {first[0]} {first[1]!r}" if first else ""
                state = "is missing" if actual is None else f"has {actual} bytes, expected {size}"
                raise TruncatedStoreError(f"store {self.name!r} ({self.m['format']}): file {rel!r} "
                                          f"{state}{where}", *(first or (None, None)))

    def _first_record_in(self, rel: str) -> tuple[int, str] | None:
        return (0, self.records[0][0]) if self.records else None


class _FolderReader(_Reader):
    def get(self, index: int) -> bytes:
        key = self.records[index][0]
        try:
            return (self.root / key).read_bytes()
        except FileNotFoundError:
            raise TruncatedStoreError(f"store {self.name!r} (folder): record {index} {key!r} is "
                                      f"missing", index, key) from None

    def _first_record_in(self, rel: str) -> tuple[int, str] | None:
        for i, r in enumerate(self.records):
            if r[0] == rel:
                return i, r[0]
        return None


_LMDB_ENVS: dict[tuple[int, str], list] = {}  # (pid, path) -> [environment, readers using it]


class _LmdbReader(_Reader):
    def __init__(self, root: Path, manifest: dict):
        super().__init__(root, manifest)
        import lmdb

        self.check_sizes()  # a truncated memory-mapped file would crash the process (SIGBUS)
        # py-lmdb refuses to open one environment twice in a process: readers in the same
        # process share it (reference-counted); a forked child opens its own.
        self.slot = (os.getpid(), os.path.realpath(root / _LMDB_DIR))
        for slot in [s for s in _LMDB_ENVS if s[1] == self.slot[1] and s[0] != self.slot[0]]:
            _LMDB_ENVS.pop(slot)[0].close()  # inherited through fork: close it here, unused
        try:
            if self.slot not in _LMDB_ENVS:
                _LMDB_ENVS[self.slot] = [lmdb.open(self.slot[1], readonly=True, lock=False,
                                                   readahead=False, meminit=False, subdir=True), 0]
            _LMDB_ENVS[self.slot][1] += 1
            self.env = _LMDB_ENVS[self.slot][0]
        except lmdb.Error as exc:
            raise CorruptRecordError(f"store {self.name!r} (lmdb): cannot open the LMDB file "
                                     f"({type(exc).__name__})", 0,
                                     self.records[0][0] if self.records else None) from None
        self.txn = self.env.begin(buffers=False)

    def get(self, index: int) -> bytes:
        import lmdb

        try:
            value = self.txn.get(index.to_bytes(8, "big"))
        except lmdb.Error as exc:
            value, why = None, type(exc).__name__
        else:
            why = "not found"
        if value is None:
            key = self.records[index][0]
            raise CorruptRecordError(f"store {self.name!r} (lmdb): record {index} {key!r} cannot "
                                     f"be read ({why})", index, key)
        return value

    def close(self) -> None:
        self.txn.abort()
        entry = _LMDB_ENVS.get(self.slot)
        if entry is not None:
            entry[1] -= 1
            if entry[1] <= 0:
                del _LMDB_ENVS[self.slot]
                entry[0].close()


class _TarReader(_Reader):
    def __init__(self, root: Path, manifest: dict):
        super().__init__(root, manifest)
        self.shards = manifest["shards"]
        self.files: dict[int, Any] = {}
        self.shard_members: dict[int, list[int]] = {}

    def get(self, index: int) -> bytes:
        key, size, _sha, shard, offset = self.records[index]
        f = self.files.get(shard)
        if f is None:
            f = self.files[shard] = open(self.root / self.shards[shard], "rb")
        f.seek(offset)
        value = f.read(size)
        if len(value) != size:
            raise TruncatedStoreError(f"store {self.name!r} (tar): record {index} {key!r} is "
                                      f"truncated ({len(value)} of {size} bytes)", index, key)
        return value

    def stream(self, shard: int) -> Iterator[tuple[int, bytes]]:
        """Yield ``(index, value)`` for one shard, reading it front to back as a stream.

        A minimal streaming tar parser for the shards :class:`_TarWriter` writes (ustar
        headers, pax records); it checks every header's checksum and each member's key
        against the manifest. Python's ``tarfile`` reads the same shards, about ten times
        slower per member.
        """
        name = self.shards[shard]
        expected = self.shard_members.setdefault(
            shard, [i for i, r in enumerate(self.records) if r[3] == shard])
        n = 0

        def fail(why: str, cls: type = CorruptRecordError) -> CorruptRecordError:
            i = expected[n] if n < len(expected) else None
            who = f"record {i} {self.records[i][0]!r}" if i is not None else "data after the last record"
            return cls(f"store {self.name!r} (tar): {who} in shard {name!r}: {why}", i,
                       None if i is None else self.records[i][0])

        with open(self.root / name, "rb", buffering=1 << 20) as f:
            pax: dict[str, str] = {}
            while True:
                h = f.read(tarfile.BLOCKSIZE)
                if len(h) < tarfile.BLOCKSIZE:
                    raise fail("the shard ends early (truncated)", TruncatedStoreError)
                if h == b"\0" * tarfile.BLOCKSIZE:
                    if n < len(expected):
                        raise fail("missing (end of archive reached)", TruncatedStoreError)
                    return
                stored = h[148:156]
                if sum(h[:148]) + 256 + sum(h[156:]) != int(stored.strip(b" \0") or b"-1", 8):
                    raise fail("tar header checksum mismatch")
                size = int(h[124:136].strip(b" \0") or b"0", 8)
                data = f.read(size)
                f.seek(-size % tarfile.BLOCKSIZE, 1)
                if len(data) < size:
                    raise fail("the shard ends early (truncated)", TruncatedStoreError)
                kind = h[156:157]
                if kind == tarfile.XHDTYPE:
                    pax = _parse_pax(data)
                    if pax is None:
                        raise fail("malformed pax header")
                    continue
                if kind not in (tarfile.REGTYPE, tarfile.AREGTYPE):
                    raise fail(f"unexpected tar member type {kind!r}")
                if n >= len(expected):
                    raise fail("unexpected extra member")
                index = expected[n]
                if h[:100].rstrip(b"\0") != f"{index:09d}.bin".encode() or \
                        pax.get(_PAX_KEY) != self.records[index][0]:
                    raise fail("member name or key does not match the manifest")
                pax = {}
                n += 1
                yield index, data

    def _first_record_in(self, rel: str) -> tuple[int, str] | None:
        shard = self.shards.index(rel) if rel in self.shards else -1
        size = (self.root / rel).stat().st_size if (self.root / rel).is_file() else 0
        for i, r in enumerate(self.records):
            if r[3] == shard and r[4] + r[1] > size:
                return i, r[0]
        for i, r in enumerate(self.records):
            if r[3] == shard:
                return i, r[0]
        return None

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        self.files = {}


class _Hdf5Reader(_Reader):
    def __init__(self, root: Path, manifest: dict):
        super().__init__(root, manifest)
        import h5py

        self.check_sizes()
        try:
            self.f = h5py.File(root / _HDF5_FILE, "r")
            self.values = self.f["values"]
            self.offsets = self.f["offsets"][:]
        except (OSError, KeyError) as exc:
            raise CorruptRecordError(f"store {self.name!r} (hdf5): cannot open the HDF5 file "
                                     f"({type(exc).__name__})", 0,
                                     self.records[0][0] if self.records else None) from None
        if len(self.offsets) != len(self.records) + 1:
            raise CorruptRecordError(f"store {self.name!r} (hdf5): offsets table does not match the "
                                     f"manifest", 0, self.records[0][0] if self.records else None)

    def get(self, index: int) -> bytes:
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        if end == start:
            return b""
        try:
            return self.values[start:end].tobytes()
        except (OSError, ValueError) as exc:
            key = self.records[index][0]
            raise CorruptRecordError(f"store {self.name!r} (hdf5): record {index} {key!r} cannot "
                                     f"be read ({type(exc).__name__})", index, key) from None

    def close(self) -> None:
        self.f.close()


_READERS = {"folder": _FolderReader, "lmdb": _LmdbReader, "tar": _TarReader, "hdf5": _Hdf5Reader}


def _open(path: Path) -> _Reader:
    manifest = _read_manifest(path)
    return _READERS[manifest["format"]](path, manifest)


def _checked(reader: _Reader, index: int, value: bytes) -> bytes:
    key, size, sha = reader.records[index][:3]
    if len(value) != size:
        raise CorruptRecordError(f"store {reader.name!r} ({reader.m['format']}): record {index} "
                                 f"{key!r} has {len(value)} bytes, expected {size}", index, key)
    got = _sha256(value)
    if got != sha:
        raise CorruptRecordError(f"store {reader.name!r} ({reader.m['format']}): record {index} "
                                 f"{key!r} fails its checksum (sha256 {got[:12]}..., expected "
                                 f"{sha[:12]}...)", index, key)
    return value


def read_all(path: str | os.PathLike, *, check: bool = True) -> Iterator[tuple[str, bytes]]:
    """Yield every ``(key, value)`` of a store in write order, exactly as written.

    The format is read from the store's manifest. Tar shards are read as streams, front to
    back; the other formats record by record.

    Args:
        path: a store directory written by :func:`write`.
        check: compare every value with its recorded size and SHA-256.

    Yields:
        ``(key, value)`` pairs.

    Raises:
        StorageError: not a store; CorruptRecordError / TruncatedStoreError naming the first
        bad record (only raised when reached, so consume the iterator).
    """
    reader = _open(Path(path))
    try:
        reader.check_sizes()
        if isinstance(reader, _TarReader):
            pairs = (p for s in range(len(reader.shards)) for p in reader.stream(s))
        else:
            pairs = ((i, reader.get(i)) for i in range(len(reader.records)))
        for index, value in pairs:
            yield reader.records[index][0], _checked(reader, index, value) if check else value
    finally:
        reader.close()


def verify(path: str | os.PathLike) -> StoreInfo:
    """Check every record of a store against its recorded size and SHA-256.

    Args:
        path: a store directory written by :func:`write`.

    Returns:
        The store's :class:`StoreInfo` when every record is intact.

    Raises:
        StorageError: ``path`` is not a store or its manifest is unreadable.
        TruncatedStoreError: a payload file is shorter than recorded or a record is missing
            (``.index`` and ``.key`` name the first affected record where it can be known).
        CorruptRecordError: a record fails its checksum (``.index``/``.key``: the first one).
    """
    for _ in read_all(path, check=True):
        pass
    return info(path)


# --------------------------------------------------------------------------- datasets


def _default_transform(key: str, value: bytes) -> tuple[str, bytes]:
    return key, value


class _LazyReader:
    """Holds one reader per process: opened on first use, reopened after ``fork``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.manifest = _read_manifest(self.path)
        self._reader: _Reader | None = None
        self._pid: int | None = None

    def reader(self) -> _Reader:
        if self._reader is None or self._pid != os.getpid():
            # A handle opened in another process (before fork) is never reused.
            self._reader = _READERS[self.manifest["format"]](self.path, self.manifest)
            self._pid = os.getpid()
        return self._reader

    @property
    def opened_in_this_process(self) -> bool:
        return self._reader is not None and self._pid == os.getpid()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_reader"], state["_pid"] = None, None
        return state


def _checked_index(owner: str, index: int, length: int) -> int:
    """``index`` as a position in ``range(length)``; negative indices count from the end."""
    if not -length <= index < length:
        raise IndexError(f"{owner}: index {index} out of range for {length} records")
    return index % length


class StoreDataset(Dataset):
    """Map-style dataset over a store: ``ds[i]`` is ``transform(key, value)`` of record ``i``.

    The file handle (LMDB environment, HDF5 file, tar shard files) is opened lazily on the
    first ``__getitem__`` in each process, so DataLoader workers never share a handle opened
    in the parent. Works with any sampler (sequential or shuffled); tar records are read by
    seeking to the data offsets recorded in the manifest.

    Args:
        path: a store directory written by :func:`write`.
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.
        check: verify each value's SHA-256 as it is read (costs a hash per sample).

    Raises:
        StorageError: ``path`` is not a store.
    """

    def __init__(self, path: str | os.PathLike, transform: Callable[[str, bytes], Any] | None = None,
                 *, check: bool = False):
        self._lazy = _LazyReader(path)
        self.transform = transform or _default_transform
        self.check = check
        self.keys = [r[0] for r in self._lazy.manifest["records"]]
        self.format = self._lazy.manifest["format"]

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> Any:
        index = _checked_index("StoreDataset", index, len(self))
        reader = self._lazy.reader()
        value = reader.get(index)
        if self.check:
            _checked(reader, index, value)
        return self.transform(self.keys[index], value)

    @property
    def handle_open(self) -> bool:
        """Whether this process has opened its own handle (for teaching and tests)."""
        return self._lazy.opened_in_this_process


class StoreIterableDataset(IterableDataset):
    """Iterable dataset over a store, split between DataLoader workers without loss or repeat.

    Tar stores are streamed shard by shard. With ``W`` workers and at least ``W`` shards,
    worker ``w`` streams shards ``w, w+W, ...``; with fewer shards than workers the split is
    record by record (worker ``w`` reads records ``w, w+W, ...`` by seeking). Other formats
    always split record by record. Every record is yielded exactly once per epoch in total.

    Shuffling (``shuffle=True``): the shard order (tar) or record order (others) is permuted
    with a generator seeded by ``(seed, epoch)`` identically in every worker *before* the
    split, then tar records pass through a per-worker shuffle buffer of ``shuffle_buffer``
    samples seeded by ``(seed, epoch, worker)``. Call :meth:`set_epoch` before each epoch
    (with ``persistent_workers=True`` the workers keep the epoch they started with).

    Args:
        path: a store directory written by :func:`write`.
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.
        shuffle: shuffle as described above.
        shuffle_buffer: buffer size for tar stores (>= 1).
        seed: base seed of the shuffles (0 <= seed < 2**63).
        check: verify each value's SHA-256 as it is read.

    Raises:
        StorageError: ``path`` is not a store. ValueError: bad buffer or seed.
    """

    def __init__(self, path: str | os.PathLike, transform: Callable[[str, bytes], Any] | None = None,
                 *, shuffle: bool = False, shuffle_buffer: int = 256, seed: int = 0,
                 check: bool = False):
        if isinstance(shuffle_buffer, bool) or not isinstance(shuffle_buffer, int) or shuffle_buffer < 1:
            raise ValueError(f"shuffle_buffer must be an integer >= 1, got {shuffle_buffer!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
            raise ValueError(f"seed must be an integer in [0, 2**63), got {seed!r}")
        self._lazy = _LazyReader(path)
        self.transform = transform or _default_transform
        self.shuffle, self.shuffle_buffer, self.seed, self.check = shuffle, shuffle_buffer, seed, check
        self.epoch = 0
        self.keys = [r[0] for r in self._lazy.manifest["records"]]
        self.format = self._lazy.manifest["format"]

    def __len__(self) -> int:
        return len(self.keys)

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the next iteration's shuffle."""
        self.epoch = int(epoch)

    def _indices(self, reader: _Reader, part: int, parts: int,
                 rng: np.random.Generator) -> Iterator[tuple[int, bytes]]:
        n = len(self.keys)
        if isinstance(reader, _TarReader) and len(reader.shards) >= parts:
            shards = np.arange(len(reader.shards))
            if self.shuffle:
                shards = rng.permutation(shards)
            for s in shards[part::parts]:
                yield from reader.stream(int(s))
            return
        order = rng.permutation(n) if self.shuffle else np.arange(n)
        for i in order[part::parts]:
            yield int(i), reader.get(int(i))

    def __iter__(self) -> Iterator[Any]:
        wi = get_worker_info()
        part, parts = (0, 1) if wi is None else (wi.id, wi.num_workers)
        reader = self._lazy.reader()
        shared = np.random.default_rng([self.seed, self.epoch])
        pairs = self._indices(reader, part, parts, shared)
        if self.shuffle and isinstance(reader, _TarReader):
            pairs = _buffer_shuffle(pairs, self.shuffle_buffer,
                                    np.random.default_rng([self.seed, self.epoch, part]))
        for index, value in pairs:
            if self.check:
                _checked(reader, index, value)
            yield self.transform(self.keys[index], value)


def _buffer_shuffle(items: Iterator, size: int, rng: np.random.Generator) -> Iterator:
    buf: list = []
    for item in items:
        if len(buf) < size:
            buf.append(item)
            continue
        j = int(rng.integers(len(buf)))
        buf[j], item = item, buf[j]
        yield item
    rng.shuffle(buf)
    yield from buf


class InMemoryStore(Dataset):
    """A whole store's values held in RAM in one contiguous ``uint8`` numpy buffer.

    Values live in one array plus an offsets array, not in a list of ``bytes`` objects: forked
    DataLoader workers then share the pages copy-on-write, and reading a sample does not touch
    a per-sample Python object's reference count (which would copy the page it lives on).

    Args:
        path: a store directory written by :func:`write` (read once, checksums checked).
        transform: ``f(key, value) -> sample``; default returns ``(key, value)``.

    Raises:
        StorageError: not a store; CorruptRecordError on a bad record while loading.
    """

    def __init__(self, path: str | os.PathLike, transform: Callable[[str, bytes], Any] | None = None):
        m = _read_manifest(Path(path))
        sizes = np.asarray([r[1] for r in m["records"]], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.buffer = np.empty(int(self.offsets[-1]), dtype=np.uint8)
        self.keys = []
        for i, (key, value) in enumerate(read_all(path, check=True)):
            self.buffer[self.offsets[i]:self.offsets[i + 1]] = np.frombuffer(value, dtype=np.uint8)
            self.keys.append(key)
        self.transform = transform or _default_transform

    @property
    def nbytes(self) -> int:
        """Bytes held by the value buffer."""
        return int(self.buffer.nbytes)

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: int) -> Any:
        index = _checked_index("InMemoryStore", index, len(self))
        value = self.buffer[self.offsets[index]:self.offsets[index + 1]].tobytes()
        return self.transform(self.keys[index], value)


# --------------------------------------------------------------------------- pre-decoded arrays


def write_memmap(path: str | os.PathLike, arrays: Iterable[np.ndarray], count: int,
                 shape: tuple[int, ...], *, overwrite: bool = False,
                 progress: bool | None = None) -> Path:
    """Write ``count`` pre-decoded ``uint8`` arrays of one ``shape`` into one ``.npy`` file.

    The file is a standard ``.npy`` of shape ``(count, *shape)``, written through a temporary
    name and renamed when complete; :class:`MemmapDataset` (or ``np.load(mmap_mode="r")``)
    reads it without loading it whole.

    Args:
        path: the ``.npy`` file to create.
        arrays: exactly ``count`` arrays, each ``uint8`` with shape ``shape``.
        count: number of arrays (>= 1).
        shape: shape of one array, e.g. ``(64, 64, 3)``.
        overwrite: replace an existing file at ``path``.
        progress: tqdm progress bar, as in :func:`write`.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: bad count/shape, an array of the wrong shape or dtype, too few or too many
            arrays, a path not ending in ``.npy``.
        FileExistsError: ``path`` exists and ``overwrite`` is False.
    """
    path = Path(path)
    if path.suffix != ".npy":
        raise ValueError(f"write_memmap: path must end in .npy, got {path.name!r}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"write_memmap: count must be an integer >= 1, got {count!r}")
    shape = tuple(shape)
    if not shape or not all(isinstance(s, int) and s >= 1 for s in shape):
        raise ValueError(f"write_memmap: shape must be positive integers, got {shape!r}")
    if path.exists() and not overwrite:
        raise FileExistsError(f"write_memmap: {path.name!r} already exists; pass overwrite=True")
    tmp = path.parent / f".{path.name}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(count, *shape))
        n = 0
        for a in _progress(arrays, count, progress, "write memmap"):
            a = np.asarray(a)
            if n >= count:
                raise ValueError(f"write_memmap: more than count={count} arrays")
            if a.dtype != np.uint8 or a.shape != shape:
                raise ValueError(f"write_memmap: array {n} is {a.dtype} {a.shape}, expected "
                                 f"uint8 {shape}")
            out[n] = a
            n += 1
        if n != count:
            raise ValueError(f"write_memmap: got {n} arrays, expected count={count}")
        out.flush()
        del out
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return path


class MemmapDataset(Dataset):
    """Map-style dataset over a ``.npy`` file of pre-decoded arrays, read through a memmap.

    The memmap is opened lazily once per process (each DataLoader worker maps the file
    itself; the OS page cache is shared). ``ds[i]`` is a writable ``torch.uint8`` tensor
    (a copy of row ``i``), paired with ``labels[i]`` when labels are given.

    Args:
        path: a ``.npy`` file written by :func:`write_memmap`.
        labels: optional sequence of ints, one per row.

    Raises:
        StorageError: the file is missing or not a 2-D+ uint8 ``.npy``. ValueError: labels of
        the wrong length.
    """

    def __init__(self, path: str | os.PathLike, labels: Iterable[int] | None = None):
        self.path = Path(path)
        try:
            arr = np.load(self.path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise StorageError(f"MemmapDataset: cannot read {self.path.name!r} as .npy "
                               f"({type(exc).__name__})") from None
        if arr.dtype != np.uint8 or arr.ndim < 2:
            raise StorageError(f"MemmapDataset: {self.path.name!r} holds {arr.dtype} of shape "
                               f"{arr.shape}; expected uint8 with a leading sample axis")
        self.shape = arr.shape
        del arr
        self.labels = None if labels is None else torch.as_tensor(list(labels), dtype=torch.long)
        if self.labels is not None and len(self.labels) != self.shape[0]:
            raise ValueError(f"MemmapDataset: {len(self.labels)} labels for {self.shape[0]} arrays")
        self._arr: np.ndarray | None = None
        self._pid: int | None = None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: int) -> Any:
        if self._arr is None or self._pid != os.getpid():
            self._arr, self._pid = np.load(self.path, mmap_mode="r"), os.getpid()
        x = torch.from_numpy(np.array(self._arr[index]))
        return x if self.labels is None else (x, self.labels[index])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_arr"], state["_pid"] = None, None
        return state
