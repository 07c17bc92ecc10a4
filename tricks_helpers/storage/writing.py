"""Writing a store safely: temporary name, verify, then one atomic swap (introduced in chapter 03).

:func:`write` builds the new store under a hidden temporary name next to ``path``
(``.<name>.tmp-<host>-<pid>-<random>``), writes its manifest, verifies it, and only then puts
it in place:

- a new ``path``: one ``rename`` (``renameat2(RENAME_NOREPLACE)`` on Linux, so a store that
  appeared meanwhile is never replaced);
- ``overwrite=True``: one ``renameat2(RENAME_EXCHANGE)`` on Linux, which swaps the old and the
  new store atomically; the old one, now under the temporary name, is then deleted. Where the
  swap is not available (another OS or file system), the old store is first renamed to
  ``.<name>.old-...``, the new one renamed into place, and the old one deleted; a process
  killed between those two renames leaves the old store under its ``.old`` name, which
  :func:`recover` (run by every :func:`write` to the same path) puts back.

So a writer killed at any moment (even by ``SIGKILL``) leaves ``path`` holding nothing (for a
new store), the old store, or the complete, verified new store. Temporaries left by a killed
writer are removed by the next :func:`write` to the same path, or by :func:`recover`; a
temporary is stale when its writer process (same host) no longer runs. Files are not
``fsync``-ed: this protects against a killed process, not against a power cut.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from tricks_helpers._checks import check_bool, check_choice, check_type
from tricks_helpers.storage._files import HOST, hash_file, remove_tree, temporary_name
from tricks_helpers.storage.formats import FORMAT_MODULES
from tricks_helpers.storage.manifest import (
    FORMATS,
    MANIFEST,
    SINGLE_FILE,
    VERSION,
    StorageError,
    StorageWarning,
    StoreInfo,
    as_path,
    check_key,
    manifest_bytes,
    new_generation,
    sha256,
)
from tricks_helpers.storage.reading import verify
from tricks_helpers.storage.store import is_store

__all__ = ["write", "recover", "check_target", "install", "left_behind"]

_OPTIONS = {"folder": set(), "lmdb": {"map_size"}, "tar": {"shard_records"}, "hdf5": set()}
_AT_FDCWD, _RENAME_NOREPLACE, _RENAME_EXCHANGE = -100, 1, 2
#: Test hook: called with the name of each stage of :func:`write` (fault-injection tests).
_stage_hook: Callable[[str], None] | None = None


def _stage(name: str) -> None:
    if _stage_hook is not None:
        _stage_hook(name)


def _stale_siblings(path: Path, kind: str) -> list[Path]:
    """Temporaries of ``path`` whose writer (on this host) no longer runs."""
    prefix = f".{path.name}.{kind}-"
    found = []
    for p in path.parent.iterdir() if path.parent.is_dir() else ():
        rest = p.name[len(prefix) :].split("-") if p.name.startswith(prefix) else []
        if len(rest) != 3 or rest[0] != HOST or not rest[1].isdigit():
            continue
        pid = int(rest[1])
        try:
            if pid != os.getpid():
                os.kill(pid, 0)
                continue  # its writer still runs
        except ProcessLookupError:
            found.append(p)
        except PermissionError:
            continue  # another user's running process
    return found


def left_behind(where: str, p: Path, error: OSError, what: str) -> str:
    """Say (as a :class:`StorageWarning`, and as the returned line) that ``p`` could not be
    removed: what it holds, where it is, and why."""
    line = (
        f"could not remove {p.name!r} ({what}) in the folder of the store: "
        f"{type(error).__name__}: {error.strerror or error}; it is left there, remove it by hand"
    )
    warnings.warn(f"{where}: {line}", StorageWarning, stacklevel=3)
    return line


def recover(path: str | os.PathLike) -> list[str]:
    """Repair what killed writers left around ``path``.

    Puts an old store back where an interrupted overwrite left ``path`` empty (the fallback
    protocol without an atomic swap), and deletes stale temporaries of ``path``.

    Args:
        path: a store directory (or ``.npy`` file) that may have been written when its writer
            was killed.

    Each leftover is tried once per call: one that cannot be removed (a read-only folder) is
    reported as a :class:`StorageWarning` and a ``"could not remove ..."`` line, and left.

    Returns:
        What was done, e.g. ``["removed .s.tmp-...", "restored s from .s.old-..."]``.

    Raises:
        TypeError: ``path`` is not a str or PathLike.
    """
    path = as_path("recover", path)
    done = []
    for old in sorted(_stale_siblings(path, "old")):
        if not path.exists() and not path.is_symlink():
            old.rename(path)
            done.append(f"restored {path.name} from {old.name}")
            continue
        error = remove_tree(old)
        done.append(
            left_behind("recover", old, error, "an old store") if error else f"removed {old.name}"
        )
    for tmp in sorted(_stale_siblings(path, "tmp")):
        error = remove_tree(tmp)
        done.append(
            left_behind("recover", tmp, error, "a temporary") if error else f"removed {tmp.name}"
        )
    return done


def _libc_renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None


def _renameat2(src: Path, dst: Path, flags: int) -> bool:
    """``renameat2(src, dst, flags)``; False where the call or the flag is unsupported."""
    fn = _libc_renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    if err == errno.EEXIST:
        raise FileExistsError(f"write: {dst.name!r} appeared while writing; not replaced")
    raise OSError(err, f"write: cannot move the new store into place: {os.strerror(err)}")


def install(tmp: Path, path: Path, replace: bool) -> None:
    """Put the complete ``tmp`` at ``path`` (see the module docstring for the guarantees)."""
    if not replace:
        if not _renameat2(tmp, path, _RENAME_NOREPLACE):
            if path.exists() or path.is_symlink():
                raise FileExistsError(f"write: {path.name!r} appeared while writing; not replaced")
            tmp.rename(path)
        _stage("installed")
        return
    if _renameat2(tmp, path, _RENAME_EXCHANGE):
        _stage("swapped")
        old = tmp  # now holds the old store
    else:
        old = temporary_name(path, "old")
        path.rename(old)
        try:
            _stage("old-moved-away")
            tmp.rename(path)
        except BaseException:
            old.rename(path)  # put the old store back before reporting the error
            raise
        _stage("installed")
    error = remove_tree(old)
    if error:
        left_behind("write", old, error, f"the replaced version of {path.name!r}")
    _stage("old-removed")


def check_target(
    where: str, path: Path, overwrite: bool, why_not_ours: Callable[[Path], str | None]
) -> bool:
    """Refuse what must not be replaced; return whether ``path`` exists and will be replaced."""
    if path.is_symlink():
        raise StorageError(
            f"{where}: {path.name!r} is a symbolic link; pass the path it points "
            f"to (a link is never replaced, nor followed to replace its target)"
        )
    if not path.parent.is_dir():
        raise StorageError(f"{where}: parent folder of {path.name!r} does not exist")
    recover(path)
    if not path.exists():
        return False
    if not overwrite:
        raise FileExistsError(
            f"{where}: {path.name!r} already exists; pass overwrite=True to replace it"
        )
    why = why_not_ours(path)
    if why:
        raise StorageError(
            f"{where}: {path.name!r} is not a store written by tricks_helpers.storage "
            f"({why}); it is never replaced nor deleted"
        )
    return True


def _progress(iterable: Iterable, total: int | None, enabled: bool | None, desc: str):
    if enabled is None:
        enabled = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit="rec")


def _pairs(records: Any) -> Iterable:
    if isinstance(records, Mapping):
        return records.items()  # a dict of key -> value
    if isinstance(records, (str, bytes, bytearray, memoryview)) or not isinstance(
        records, Iterable
    ):
        raise TypeError(
            f"write: records must be an iterable of (key, value) pairs or a "
            f"mapping, got {type(records).__name__}"
        )
    return records


def _value(value: Any, index: int, key: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(
        f"record {index} {key!r}: value must be bytes, bytearray or memoryview, "
        f"got {type(value).__name__}"
    )


def _file_entries(root: Path, fmt: str, extra: dict) -> dict[str, list]:
    names = extra["shards"] if fmt == "tar" else [SINGLE_FILE[fmt]] if fmt in SINGLE_FILE else []
    entries = {}
    for rel in names:
        with open(root / rel, "rb") as f:
            entries[rel] = [os.fstat(f.fileno()).st_size, hash_file(f)]
    return entries


def _why_not_a_store(path: Path) -> str | None:
    if not path.is_dir():
        return "not a directory"
    return is_store(path)


def write(
    path: str | os.PathLike,
    records: Iterable[tuple[str, bytes]] | Mapping[str, bytes],
    format: str = "folder",
    *,
    overwrite: bool = False,
    progress: bool | None = None,
    verify_after: bool = True,
    **options: Any,
) -> StoreInfo:
    """Write ``(key, value)`` records to a new store at ``path``, atomically.

    Args:
        path: the store directory to create.
        records: ``(key, value)`` pairs, or a mapping ``{key: value}``; ``key`` a non-empty str
            (unique), ``value`` bytes-like (may be empty). In the ``"folder"`` format keys are
            relative paths (see :mod:`tricks_helpers.storage.folder`).
        format: one of :data:`FORMATS`.
        overwrite: replace an existing store at ``path``: a directory whose manifest has a
            valid digest and which holds only what its manifest lists (never a user's folder
            that merely holds a file named ``_store.json``, never through a symbolic link).
            Where the old version cannot be removed afterwards (a read-only folder), a
            :class:`StorageWarning` says what is left where; the new store is in place.
        progress: show a tqdm progress bar; ``None`` (default) shows it only when stderr is a
            terminal, so notebooks and tests stay quiet.
        verify_after: verify the new store (:func:`tricks_helpers.storage.verify`) before it
            is put in place.
        **options: ``shard_records`` (tar, records per shard, default 1000), ``map_size``
            (lmdb, initial map size in bytes, >= 4096; it grows as needed).

    Returns:
        A :class:`StoreInfo` of the new store.

    Raises:
        TypeError: wrong argument types, a key that is not a str, a value that is not bytes-like.
        ValueError: unknown format or option, a bad or duplicate key.
        FileExistsError: ``path`` exists and ``overwrite`` is False.
        StorageError: ``path`` is a symbolic link or not a store; verification failed.
        OSError: the disk is full (nothing is left under ``path`` or a temporary name).
    """
    path = as_path("write", path)
    check_type("write", "format", format, str)
    check_choice("write", "format", format, FORMATS)
    check_bool("write", "overwrite", overwrite)
    check_bool("write", "verify_after", verify_after)
    if progress is not None:
        check_bool("write", "progress", progress)
    unknown = set(options) - _OPTIONS[format]
    if unknown:
        raise ValueError(
            f"write: option(s) {sorted(unknown)} do not apply to format {format!r} "
            f"(it accepts {sorted(_OPTIONS[format]) or 'none'})"
        )
    pairs = _pairs(records)
    replace = check_target("write", path, overwrite, _why_not_a_store)
    tmp = temporary_name(path)
    tmp.mkdir()
    writer = None
    try:
        _stage("started")
        writer = FORMAT_MODULES[format].Writer(tmp, **options)
        rows, seen = [], set()
        total = len(pairs) if hasattr(pairs, "__len__") else None
        for index, item in enumerate(_progress(pairs, total, progress, f"write {format}")):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise TypeError(
                    f"record {index}: expected a (key, value) pair, got {type(item).__name__}"
                )
            key = check_key(item[0], index)
            value = _value(item[1], index, key)
            if key in seen:
                raise ValueError(f"record {index}: duplicate key {key!r}")
            seen.add(key)
            sha = sha256(value)
            rows.append([key, len(value), sha] + writer.add(index, key, value, sha))
        extra = writer.close()
        writer = None
        _stage("payload-written")
        body = {
            "version": VERSION,
            "format": format,
            "generation": new_generation(),
            "count": len(rows),
            "checksum": "sha256",
            **extra,
            "files": _file_entries(tmp, format, extra),
            "records": rows,
        }
        (tmp / MANIFEST).write_bytes(manifest_bytes(body))
        _stage("manifest-written")
        if verify_after:
            verify(tmp)
        _stage("verified")
        install(tmp, path, replace)
    except BaseException:
        if writer is not None:
            try:
                writer.abort()
            except Exception:  # the original error matters more
                pass
        remove_tree(tmp)  # best effort: the original error matters more
        raise
    return StoreInfo(path.name, format, len(rows), sum(r[1] for r in rows))
