"""The ``"lmdb"`` format: one memory-mapped LMDB key-value file (introduced in chapter 03).

Record ``i`` is stored under the 8-byte big-endian key ``i``; the text keys live in the
manifest. LMDB has no checksums of its own pages, and a damaged page kills the process inside
the library: a flipped bit in a branch or leaf page fails an assertion (SIGABRT), a file shorter
than its pages faults (SIGBUS). So no reader lets LMDB open a file it has not checked:

- its size must be the manifest's (every reader, checked or not; and again before each read,
  so a file truncated while it is open raises instead of faulting);
- its *tree digest* (:func:`tree_digest`: the meta pages, every branch and leaf page and each
  overflow page's header, read with ``pread`` without LMDB) must be the one recorded when it
  was written. That is every byte LMDB parses to find a value; the values themselves (in
  overflow pages) are only copied, and ``check=True`` compares each with its SHA-256.
  :func:`tricks_helpers.storage.verify` also hashes ``data.mdb`` whole.

Readers open the environment read-only, without a lock file, lazily, once per process. py-lmdb
refuses to open the same files twice in one process, so readers in one process share one
environment per **file identity** ``(st_dev, st_ino)`` of ``data.mdb``, reference-counted: a
store written again at the same path is a new file and gets a new environment (never a stale
one); an environment inherited through ``fork`` is closed in the child and opened afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import threading
import weakref
from pathlib import Path
from typing import Any

from tricks_helpers._checks import check_int
from tricks_helpers.storage.manifest import SINGLE_FILE, CorruptRecordError, TruncatedStoreError
from tricks_helpers.storage.store import Store

#: Whether a reader may parse a file that fails its checksum (LMDB: no, it may crash).
SAFE_TO_PARSE_DAMAGED = False
_DIR = "lmdb"
_MAX_MAP = 1 << 46  # 64 TiB: more than a 64-bit address space can map in practice
# (pid, st_dev, st_ino) of data.mdb -> [environment, readers using it]
_ENVS: dict[tuple[int, int, int], list] = {}
_ENVS_LOCK = threading.RLock()  # readers of several datasets, in several threads, share _ENVS
if hasattr(os, "register_at_fork"):  # a child forked while another thread held it: a new one
    os.register_at_fork(after_in_child=lambda: globals().update(_ENVS_LOCK=threading.RLock()))


_MAGIC, _P_BRANCH, _P_LEAF, _F_BIGDATA = 0xBEEFC0DE, 0x01, 0x02, 0x01
_HDR = 16  # LMDB's page header: pgno u64, pad u16, flags u16, lower u16, upper u16


def tree_digest(fd: int, size: int) -> str:
    """SHA-256 of every byte LMDB parses to find a value, read without LMDB.

    The two meta pages, then every branch and leaf page of the main tree (depth first from
    the root of the newest meta page) and the header of each overflow page a leaf points to.
    Values in overflow pages are not hashed: LMDB copies them without parsing. A file whose
    digest matches the one recorded when it was written has the tree it had then, so LMDB
    reads it as it did then (a damaged branch or leaf page aborts LMDB inside an assertion).

    Raises:
        ValueError: the file is not an LMDB file this walk can follow (damaged).
    """
    h = hashlib.sha256()
    head = os.pread(fd, _HDR + 136, 0)
    if len(head) < _HDR + 136 or struct.unpack_from("<I", head, _HDR)[0] != _MAGIC:
        raise ValueError("no LMDB meta page")
    psize = struct.unpack_from("<I", head, _HDR + 24)[0]  # mm_psize = mm_dbs[FREE].md_pad
    if psize < 512 or psize > 1 << 16 or psize & (psize - 1) or size % psize or size < 2 * psize:
        raise ValueError(f"page size {psize} does not fit a file of {size} bytes")
    pages = size // psize
    metas = []
    for m in (0, 1):
        page = os.pread(fd, psize, m * psize)
        h.update(page)
        root, last, txnid = struct.unpack_from("<QQQ", page, _HDR + 112)
        metas.append((txnid, root, last))
    _txnid, root, last = metas[1] if metas[0][0] < metas[1][0] else metas[0]  # as LMDB picks
    if root == 0xFFFFFFFFFFFFFFFF:  # an empty tree
        return h.hexdigest()
    seen: set[int] = set()
    stack = [root]
    while stack:
        pgno = stack.pop()
        if not 2 <= pgno < min(pages, last + 1) or pgno in seen:
            raise ValueError(f"page {pgno} is out of range or repeated")
        seen.add(pgno)
        page = os.pread(fd, psize, pgno * psize)
        h.update(page)
        flags, lower = struct.unpack_from("<HH", page, 10)
        if flags & (_P_BRANCH | _P_LEAF) not in (_P_BRANCH, _P_LEAF) or not _HDR <= lower <= psize:
            raise ValueError(f"page {pgno} is neither a branch nor a leaf")
        children = []
        for at in struct.unpack_from(f"<{(lower - _HDR) // 2}H", page, _HDR):
            if at + 8 > psize:
                raise ValueError(f"page {pgno} has a node outside the page")
            lo, hi, nflags, ksize = struct.unpack_from("<HHHH", page, at)
            if flags & _P_BRANCH:
                children.append(lo | hi << 16 | nflags << 32)
            elif nflags & _F_BIGDATA:
                if at + 8 + ksize + 8 > psize:
                    raise ValueError(f"page {pgno} has a node outside the page")
                (over,) = struct.unpack_from("<Q", page, at + 8 + ksize)
                if not 2 <= over < min(pages, last + 1):
                    raise ValueError(f"overflow page {over} is out of range")
                h.update(os.pread(fd, _HDR, over * psize))
        stack.extend(reversed(children))
    return h.hexdigest()


class Writer:
    """Writes values in transactions of ``_BATCH`` records; the map grows as needed."""

    _BATCH = 256

    def __init__(self, root: Path, map_size: int = 1 << 26, **_: Any):
        import lmdb

        map_size = check_int("write", "map_size", map_size, minimum=1 << 12, maximum=_MAX_MAP)
        self.lmdb = lmdb
        self.root = root
        with self._os_errors(f"cannot map {map_size} bytes"):
            self.env = lmdb.open(
                str(root / _DIR),
                map_size=map_size,
                subdir=True,
                lock=False,
                readahead=False,
                meminit=False,
                max_dbs=0,
                sync=False,
                metasync=False,
            )
        self.pending: list[tuple[bytes, bytes]] = []

    @contextlib.contextmanager
    def _os_errors(self, doing: str):
        """LMDB's own errors (a full disk, an impossible map) as the OSError write promises."""
        try:
            yield
        except self.lmdb.MapFullError:
            raise
        except self.lmdb.Error as exc:
            raise OSError(f"write (lmdb): {doing}: {exc}") from None

    def add(self, index: int, key: str, value: bytes, sha: str) -> list:
        self.pending.append((index.to_bytes(8, "big"), value))
        if len(self.pending) >= self._BATCH:
            self._flush()
        return []

    def _flush(self) -> None:
        while self.pending:
            try:
                with self._os_errors("cannot write"), self.env.begin(write=True) as txn:
                    for k, v in self.pending:
                        txn.put(k, v)
                self.pending = []
            except self.lmdb.MapFullError:
                size = self.env.info()["map_size"] * 2
                if size > _MAX_MAP:
                    raise OSError(f"write (lmdb): the map would exceed {_MAX_MAP} bytes") from None
                with self._os_errors(f"cannot map {size} bytes"):
                    self.env.set_mapsize(size)

    def close(self) -> dict:
        self._flush()
        with self._os_errors("cannot write"):
            self.env.sync(True)
        self.env.close()
        fd = os.open(self.root / SINGLE_FILE["lmdb"], os.O_RDONLY)
        try:
            return {"lmdb_tree": tree_digest(fd, os.fstat(fd).st_size)}
        finally:
            os.close(fd)

    def abort(self) -> None:
        self.env.close()


def _release(key: tuple[int, int, int], txn: Any, fd: int) -> None:
    with _ENVS_LOCK:
        _release_locked(key, txn, fd)


def _release_locked(key: tuple[int, int, int], txn: Any, fd: int) -> None:
    os.close(fd)
    entry = _ENVS.get(key)
    if entry is None or key[0] != os.getpid():
        return
    try:
        txn.abort()
    except Exception:  # the environment may already be closed
        pass
    entry[1] -= 1
    if entry[1] <= 0:
        del _ENVS[key]
        entry[0].close()


class Reader:
    """Random access to the values; checks the file, then opens the shared environment, on
    first use (see the module docstring)."""

    def __init__(self, store: Store):
        self.store = store
        self.txn: Any = None
        self.fd = -1  # data.mdb of this generation, held open to check its size

    def _error(self, why: str, cls: type = CorruptRecordError) -> CorruptRecordError:
        return cls(f"store {self.store.name!r} (lmdb): file {SINGLE_FILE['lmdb']!r} {why}")

    def _check_size(self) -> os.stat_result:
        st = os.fstat(self.fd)
        want = self.store.files[SINGLE_FILE["lmdb"]][0]
        if st.st_size != want:
            raise self._error(f"has {st.st_size} bytes, expected {want}", TruncatedStoreError)
        return st

    def _open(self) -> None:
        with _ENVS_LOCK:
            self._open_locked()

    def _open_locked(self) -> None:
        import lmdb

        try:  # a regular file in the store: never a link, a FIFO or a device
            self.fd = self.store.open_fd(SINGLE_FILE["lmdb"])
        except FileNotFoundError:
            raise self._error("is missing", TruncatedStoreError) from None
        try:
            st = self._check_size()
            key = (os.getpid(), st.st_dev, st.st_ino)
            for other in [k for k in _ENVS if k[0] != key[0]]:
                _ENVS.pop(other)[0].close()  # inherited through fork: unusable here, close it
            if key not in _ENVS:  # a file LMDB has not opened yet in this process: check it
                try:
                    digest = tree_digest(self.fd, st.st_size)
                except ValueError as exc:
                    raise self._error(f"is not a readable LMDB file ({exc})") from None
                if digest != self.store.manifest["lmdb_tree"]:
                    raise self._error("has a damaged LMDB tree (changed since it was written)")
                try:
                    env = lmdb.open(
                        self.store.file_path(_DIR),
                        readonly=True,
                        lock=False,
                        readahead=False,
                        meminit=False,
                        subdir=True,
                    )
                except lmdb.Error as exc:
                    raise self._error(f"cannot be opened ({type(exc).__name__})") from None
                _ENVS[key] = [env, 0]
            self.txn = _ENVS[key][0].begin(buffers=False)
        except BaseException:
            os.close(self.fd)
            self.fd = -1
            raise
        _ENVS[key][1] += 1
        self._finalizer = weakref.finalize(self, _release, key, self.txn, self.fd)

    def get(self, index: int) -> bytes:
        import lmdb

        if self.txn is None:
            self._open()
        else:
            self._check_size()  # one fstat: a file truncated under the map would fault
        try:
            value = self.txn.get(index.to_bytes(8, "big"))
            why = "not found"
        except lmdb.Error as exc:
            value, why = None, type(exc).__name__
        if value is None:
            key = self.store.keys[index]
            raise CorruptRecordError(
                f"store {self.store.name!r} (lmdb): record {index} {key!r} cannot be read ({why})",
                index,
                key,
            )
        return value

    def close(self) -> None:
        if self.txn is not None:
            self._finalizer()
            self.txn = None
            self.fd = -1
