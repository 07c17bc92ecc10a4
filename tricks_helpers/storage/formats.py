"""The format registry: format name -> the module that writes and reads it (one home).

Both :mod:`~tricks_helpers.storage.writing` and :mod:`~tricks_helpers.storage.reading` look a
format up here. Each module holds a ``Writer``, a ``Reader`` and ``SAFE_TO_PARSE_DAMAGED``
(whether its reader may parse a file that fails its checksum without risking the process).
"""

from __future__ import annotations

from types import ModuleType

from tricks_helpers.storage import folder, hdf5_store, lmdb_store, tar_store
from tricks_helpers.storage.store import Store

__all__ = ["FORMAT_MODULES", "reader"]

#: Format name -> module holding its ``Writer``, ``Reader`` and ``SAFE_TO_PARSE_DAMAGED``.
FORMAT_MODULES: dict[str, ModuleType] = {
    "folder": folder,
    "lmdb": lmdb_store,
    "tar": tar_store,
    "hdf5": hdf5_store,
}


def reader(store: Store):
    """A new reader of ``store`` (it opens its files on first use)."""
    return FORMAT_MODULES[store.format].Reader(store)
