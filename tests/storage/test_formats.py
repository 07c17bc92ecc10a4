"""Tests of tricks_helpers.storage.formats: the one registry of format -> module."""

from __future__ import annotations

import pytest

from tricks_helpers import storage
from tricks_helpers.storage import folder, formats, hdf5_store, lmdb_store, tar_store
from tricks_helpers.storage.store import open_store


def test_every_format_has_one_module_with_a_writer_a_reader_and_a_parse_flag():
    assert formats.FORMAT_MODULES == {
        "folder": folder,
        "lmdb": lmdb_store,
        "tar": tar_store,
        "hdf5": hdf5_store,
    }
    assert set(formats.FORMAT_MODULES) == set(storage.FORMATS)
    for module in formats.FORMAT_MODULES.values():
        assert callable(module.Writer) and callable(module.Reader)
        assert isinstance(module.SAFE_TO_PARSE_DAMAGED, bool)
    # what a damaged file may be parsed by: the formats read with Python's own parsers
    safe = {name for name, m in formats.FORMAT_MODULES.items() if m.SAFE_TO_PARSE_DAMAGED}
    assert safe == {"folder", "tar"}


@pytest.mark.parametrize("fmt", storage.FORMATS)
def test_reader_reads_every_record_of_its_format(stores, fmt):
    recs, paths = stores
    store = open_store(paths[fmt])
    reader = formats.reader(store)
    try:
        assert isinstance(reader, formats.FORMAT_MODULES[fmt].Reader)
        got = {store.keys[i]: reader.get(i) for i in (0, 1, 2, 3, len(store) - 1)}
    finally:
        reader.close()
    assert got == {k: v for k, v in recs if k in got}


def test_reader_of_an_unknown_format_is_a_key_error(stores):
    _, paths = stores
    store = open_store(paths["folder"])
    store.format = "zip"
    with pytest.raises(KeyError, match="zip"):
        formats.reader(store)
