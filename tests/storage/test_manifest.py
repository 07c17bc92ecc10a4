"""Tests of storage.manifest: the digest and the field checks of every manifest."""

from __future__ import annotations

import json

import pytest

from tricks_helpers import storage
from tricks_helpers.storage import manifest
from tricks_helpers.storage.manifest import CorruptRecordError, StorageError

from .support import (
    edit_manifest,
    write_store,
)


@pytest.mark.parametrize("fmt", ["lmdb", "hdf5"])
def test_a_flipped_key_bit_in_the_manifest_is_caught(tmp_path, thirty, fmt):
    write_store(tmp_path / "s", thirty, fmt)
    m = tmp_path / "s" / storage.MANIFEST
    data = bytearray(m.read_bytes())
    at = data.find(b'"img/005"')
    data[at + 4] ^= 0x01  # 'img/005' -> 'img.005', a valid key
    m.write_bytes(bytes(data))
    for call in (storage.verify, storage.info, storage.StoreDataset, storage.read_all):
        with pytest.raises(
            CorruptRecordError, match="manifest _store.json is damaged: it fails its digest"
        ):
            call(tmp_path / "s")


@pytest.mark.parametrize("bad_key", ["../outside.bin", "/etc/hostname", "a/../../x"])
def test_a_manifest_key_never_reads_outside_the_store(tmp_path, bad_key):
    (tmp_path / "outside.bin").write_bytes(b"secret")
    storage.write(tmp_path / "s", [("a", b"secret")], format="folder")
    edit_manifest(tmp_path / "s", lambda m: m["records"][0].__setitem__(0, bad_key), redigest=True)
    with pytest.raises(CorruptRecordError, match="is not a safe path in the store"):
        storage.StoreDataset(tmp_path / "s")[0]
    with pytest.raises(CorruptRecordError, match="is not a safe path in the store"):
        storage.verify(tmp_path / "s")


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda m: m["files"].update({"../x": [1, "0" * 64]}), "bad file entry '../x'"),
        (lambda m: m["files"].clear(), "payload files"),
        (lambda m: m["records"][0].__setitem__(1, -1), "record 0 is malformed"),
        (lambda m: m["records"][0].__setitem__(2, "xyz"), "record 0 is malformed"),
        (lambda m: m["records"].append(list(m["records"][0])), "count"),
        (
            lambda m: m.update(
                count=m["count"] + 1, records=m["records"] + [list(m["records"][0])]
            ),
            "record 30 is malformed or repeats a key",
        ),
        (lambda m: m.update(format="zip"), "format, records or files missing"),
    ],
)
def test_manifest_fields_are_checked_even_with_a_valid_digest(tmp_path, thirty, edit, match):
    write_store(tmp_path / "s", thirty, "lmdb")
    edit_manifest(tmp_path / "s", edit, redigest=True)
    with pytest.raises(CorruptRecordError, match=match):
        storage.verify(tmp_path / "s")


def test_not_a_store_and_broken_manifest(tmp_path):
    with pytest.raises(StorageError, match="no store at 'nothing'"):
        storage.verify(tmp_path / "nothing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(StorageError, match="not a store written by"):
        storage.read_all(tmp_path / "plain")
    storage.write(tmp_path / "s", [("a", b"1")], format="hdf5")
    m = tmp_path / "s" / storage.MANIFEST
    m.write_bytes(m.read_bytes()[:-20])
    with pytest.raises(CorruptRecordError, match=r"manifest _store.json is damaged: unreadable"):
        storage.StoreDataset(tmp_path / "s")
    m.write_text(json.dumps({"version": 1, "format": "hdf5", "count": 0, "records": []}))
    with pytest.raises(CorruptRecordError, match="unreadable \\(KeyError\\)"):
        storage.info(tmp_path / "s")
    old = {"version": 1, "format": "hdf5", "count": 0, "records": []}
    m.write_bytes(manifest.manifest_bytes(old))
    with pytest.raises(StorageError, match="manifest version 1; this module reads version 3"):
        storage.info(tmp_path / "s")
