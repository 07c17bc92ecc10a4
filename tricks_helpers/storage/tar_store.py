"""The ``"tar"`` format: POSIX tar shards, to be streamed front to back (introduced in chapter 03).

Shards are written by the standard library's :mod:`tarfile` (pax format) and read by any tar
tool. Member ``i`` is named ``<i:09d>.bin`` (safe to extract anywhere) and carries a pax
header with its key and SHA-256, so a shard describes itself without the manifest.

Reading does not parse tar at all: the manifest records each value's shard and the offset of
its data, so a record is one ``seek`` + ``read``, and streaming a shard is reading it front to
back. ``tarfile`` parses the shards in :func:`check_structure`, which
:func:`tricks_helpers.storage.verify` runs: every member's name, key, size and data offset must
agree with the manifest. (Measured in chapter 03's development: reading members through
``tarfile`` costs several times more per record than the offsets do; a parser is needed only to
check the structure.)

A reader keeps at most :data:`OPEN_SHARDS` shard files open (least recently used first out),
so a store of thousands of shards never runs out of file descriptors.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO

from tricks_helpers._checks import check_int
from tricks_helpers.storage.manifest import TAR_BLOCK, CorruptRecordError, TruncatedStoreError
from tricks_helpers.storage.store import Store

#: Whether a reader may parse a file that fails its checksum (plain reads: yes).
SAFE_TO_PARSE_DAMAGED = True
#: Most shard files one reader keeps open at once.
OPEN_SHARDS = 8
PAX_KEY = "TRICKS.key"
PAX_SHA = "TRICKS.sha256"
_PATTERN = "shard-{:05d}.tar"


def member_name(index: int) -> str:
    return f"{index:09d}.bin"


class Writer:
    """Writes records into shards of ``shard_records`` records each."""

    def __init__(self, root: Path, shard_records: int = 1000, **_: Any):
        self.shard_records = check_int("write", "shard_records", shard_records, minimum=1)
        self.root = root
        self.shards: list[str] = []
        self.tar: tarfile.TarFile | None = None
        self.in_shard = 0

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        if self.tar is None or self.in_shard >= self.shard_records:
            self._close_shard()
            self.shards.append(_PATTERN.format(len(self.shards)))
            self.tar = tarfile.open(
                self.root / self.shards[-1], "w", format=tarfile.PAX_FORMAT, encoding="utf-8"
            )
            self.in_shard = 0
        member = tarfile.TarInfo(member_name(index))
        member.size, member.mode = len(value), 0o644
        member.pax_headers = {PAX_KEY: key, PAX_SHA: sha}
        self.tar.addfile(member, io.BytesIO(value))
        # after addfile, tar.offset is past the data and its padding to a whole block
        offset = self.tar.offset - -(-len(value) // TAR_BLOCK) * TAR_BLOCK
        self.in_shard += 1
        return [len(self.shards) - 1, offset]

    def _close_shard(self) -> None:
        if self.tar is not None:
            self.tar.close()  # writes the end-of-archive blocks
            self.tar = None

    def close(self) -> dict:
        self._close_shard()
        return {"shards": self.shards}

    def abort(self) -> None:
        if self.tar is not None:
            self.tar.fileobj.close()
            self.tar = None


class Reader:
    """Random access (and front-to-back streams) by the offsets recorded in the manifest."""

    def __init__(self, store: Store):
        self.store = store
        self.shards: list[str] = store.manifest["shards"]
        self.files: OrderedDict[int, BinaryIO] = OrderedDict()

    def _file(self, shard: int, index: int) -> BinaryIO:
        f = self.files.pop(shard, None)
        if f is None:
            if len(self.files) >= OPEN_SHARDS:
                self.files.popitem(last=False)[1].close()
            rel = self.shards[shard]
            try:
                raw = self.store.open(rel)  # a regular file in the store, never a link or FIFO
            except FileNotFoundError:
                raise TruncatedStoreError(
                    f"store {self.store.name!r} (tar): shard {rel!r} is missing"
                ) from None
            actual, want = os.fstat(raw.fileno()).st_size, self.store.files[rel][0]
            if actual != want:  # with or without check: a shard grown or cut is not read
                raw.close()
                key = self.store.keys[index]
                state = "is truncated" if actual < want else "cannot be read"
                raise TruncatedStoreError(
                    f"store {self.store.name!r} (tar): record {index} {key!r} {state}: its "
                    f"shard {rel!r} has {actual} bytes, expected {want}",
                    index,
                    key,
                )
            f = io.BufferedReader(raw, buffer_size=1 << 20)
        self.files[shard] = f  # most recently used last
        return f

    def get(self, index: int) -> bytes:
        key, size, _sha, shard, offset = self.store.records[index]
        f = self._file(shard, index)
        f.seek(offset)  # within the 1 MiB buffer when streaming: no system call
        value = f.read(size)
        if len(value) != size:
            raise TruncatedStoreError(
                f"store {self.store.name!r} (tar): record {index} {key!r} "
                f"is truncated ({len(value)} of {size} bytes)",
                index,
                key,
            )
        return value

    def close(self) -> None:
        for f in self.files.values():
            f.close()
        self.files.clear()


def check_structure(store: Store) -> None:
    """Parse every shard with :mod:`tarfile` and compare each member with the manifest.

    Raises:
        CorruptRecordError: naming the first record whose member is unreadable or whose name,
            key, size or data offset differs from the manifest (or an unexpected member).
    """
    members = store.shard_members()
    for shard, name in enumerate(store.manifest["shards"]):
        expected = iter(members[shard])
        index = None
        try:
            with (
                store.open(name) as raw,
                tarfile.open(fileobj=raw, mode="r:", encoding="utf-8") as tar,
            ):
                for m in tar:
                    index = next(expected, None)
                    if index is None:
                        raise _error(store, name, None, "an unexpected extra member")
                    key, size, _sha, _shard, offset = store.records[index]
                    if (m.name, m.pax_headers.get(PAX_KEY), m.size, m.offset_data, m.isreg()) != (
                        member_name(index),
                        key,
                        size,
                        offset,
                        True,
                    ):
                        raise _error(
                            store,
                            name,
                            index,
                            "member name, key, size or offset does not match the manifest",
                        )
        except (tarfile.TarError, EOFError, UnicodeError) as exc:
            raise _error(
                store,
                name,
                _next_after(members[shard], index),
                f"unreadable tar member ({type(exc).__name__})",
            ) from None
        missing = next(expected, None)
        if missing is not None:
            raise _error(store, name, missing, "member missing", TruncatedStoreError)


def _next_after(members: list[int], index: int | None) -> int | None:
    if index is None:
        return members[0] if members else None
    at = members.index(index) + 1
    return members[at] if at < len(members) else None


def _error(
    store: Store, shard: str, index: int | None, why: str, cls: type = CorruptRecordError
) -> CorruptRecordError:
    key = None if index is None else store.keys[index]
    who = "data after the last record" if index is None else f"record {index} {key!r}"
    return cls(f"store {store.name!r} (tar): {who} in shard {shard!r}: {why}", index, key)
