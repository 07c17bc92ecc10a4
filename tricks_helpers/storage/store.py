"""Opening a store: its checked manifest and its directory, held open (chapter 03).

:func:`open_store` reads a store's manifest (:mod:`tricks_helpers.storage.manifest`), checks
its digest and every field, and returns a :class:`Store` that holds the store directory by a
file descriptor: every payload file is opened through it, so a reader keeps reading the
generation it opened even when the store is written again at the same path, and
:meth:`Store.replaced` says cheaply whether that happened. :func:`is_store` recognises a store
by its manifest's content (the check before ``write(..., overwrite=True)`` removes anything);
:func:`checked` checks one record's bytes against the manifest.

This module imports neither torch nor a format library. Error messages name stores by their
base name only (never a full machine path).
"""

from __future__ import annotations

import errno
import os
import stat
import weakref
from pathlib import Path
from typing import Any, BinaryIO

from tricks_helpers._checks import check_int
from tricks_helpers.storage._files import identity
from tricks_helpers.storage.manifest import (
    FORMATS,
    MANIFEST,
    VERSION,
    CorruptRecordError,
    StorageError,
    StoreInfo,
    StoreReplacedError,
    as_path,
    parse_manifest,
    sha256,
    validate,
)

__all__ = ["Store", "open_store", "is_store", "checked", "info"]

_PROC_FD = "/proc/self/fd"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


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

    def open_fd(self, rel: str) -> int:
        """A descriptor of payload file ``rel`` of this generation, opened for reading.

        Only a regular file inside the store directory is opened: no path component may be a
        symbolic link (each is opened with ``O_NOFOLLOW`` below the store's descriptor, so a
        link to a file outside the store, or to ``/dev/zero``, is refused), and a FIFO or a
        device is refused without blocking (opened with ``O_NONBLOCK``, then checked).

        Raises:
            FileNotFoundError: ``rel`` is missing.
            CorruptRecordError: ``rel`` (or a folder on its way) is a symbolic link, or not a
                regular file.
        """
        parts = rel.split("/")
        held: list[int] = []
        try:
            at = self.fd
            for part in parts[:-1]:
                try:
                    at = os.open(part, _DIR_FLAGS, dir_fd=at)
                except OSError as exc:  # a file, or a link (O_NOFOLLOW + O_DIRECTORY)
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    st = os.stat(part, dir_fd=at, follow_symlinks=False)
                    if not stat.S_ISLNK(st.st_mode):
                        raise NotADirectoryError(errno.ENOTDIR, "not a directory", part) from None
                    raise self._not_regular(rel, st) from None
                held.append(at)
            try:
                fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=at)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                raise self._not_regular(
                    rel, os.stat(parts[-1], dir_fd=at, follow_symlinks=False)
                ) from None
        finally:
            for d in held:
                os.close(d)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise self._not_regular(rel, st)
        os.set_blocking(fd, True)
        return fd

    def _not_regular(self, rel: str, st: os.stat_result) -> CorruptRecordError:
        kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        return CorruptRecordError(
            f"store {self.name!r} ({self.format}): file {rel!r} is {kind}; a store holds "
            f"only regular files (it was changed after it was written), so it is not read"
        )

    def open(self, rel: str) -> BinaryIO:
        """Payload file ``rel`` of this generation, opened for reading (unbuffered); only a
        regular file inside the store, as :meth:`open_fd` says."""
        return open(self.open_fd(rel), "rb", buffering=0)

    def stat(self, rel: str) -> os.stat_result | None:
        """``os.stat`` of payload file ``rel`` of this generation, None where it is missing.

        Raises:
            CorruptRecordError: ``rel`` is a symbolic link or not a regular file (see
                :meth:`open_fd`).
        """
        try:
            fd = self.open_fd(rel)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)

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
        """The error for a store that is no longer the generation read: deleted (nothing at its
        path now) or replaced (written again at the same path)."""
        if not os.path.lexists(self.path):
            return StoreReplacedError(
                f"store {self.name!r} was deleted while reading (nothing is at its path now)"
            )
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
    mfd = os.open(MANIFEST, os.O_RDONLY, dir_fd=fd)
    with open(mfd, "rb") as f:
        return parse_manifest(f.read(), name)


def _moved(path: Path, fd: int) -> bool:
    """Whether ``path`` now names another directory than the one ``fd`` holds (a store was
    swapped into place since ``fd`` was opened)."""
    try:
        now = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino)


def _open_dir(path: Path, where: str, attempts: int = 5) -> tuple[int, dict]:
    """A descriptor of the store directory ``path`` and its digest-checked manifest.

    A writer swaps a new store into place and then deletes the old one: a reader that opened
    the old directory just before the swap can find its manifest gone. When ``path`` names
    another directory by then, the directory is opened again (``attempts`` times at most), so
    opening a store that is being replaced gives the old or the new one, never "not a store".
    """
    not_store = StorageError(
        f"{where}: {path.name!r} is not a store written by "
        f"tricks_helpers.storage (no {MANIFEST} manifest)"
    )
    for attempt in range(attempts):
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
        except (StorageError, OSError):
            moved = _moved(path, fd)
            os.close(fd)
            if moved and attempt + 1 < attempts:
                continue
            raise
        except BaseException:
            os.close(fd)
            raise
    raise AssertionError("unreachable")  # the loop returns or raises


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
        validate(path.name, m)
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
