"""Tests of storage.folder: one file per record, keys as safe relative paths."""

from __future__ import annotations

import pytest

from tricks_helpers import storage
from tricks_helpers.storage.manifest import TruncatedStoreError

from .support import (
    BIG,
)


def test_folder_keeps_class_folders_as_users_do(stores):
    _, paths = stores
    root = paths["folder"]
    assert (root / "big" / "blob.bin").read_bytes() == BIG
    assert (root / "ünï" / "cødé €🙂.jpg").read_bytes() == "héllo".encode()
    assert (root / storage.MANIFEST).is_file()


@pytest.mark.parametrize(
    "key, why",
    [
        ("../evil", "'..'"),
        ("a/../b", "'..'"),
        ("/etc/x", "absolute"),
        ("a//b", "empty"),
        ("a/./b", "'.'"),
        ("a\\b", "backslash"),
        ("dir/", "empty"),
        (storage.MANIFEST, "manifest"),
        ("x" * 256, "255 bytes"),
    ],
)
def test_folder_refuses_unsafe_keys(tmp_path, key, why):
    with pytest.raises(ValueError, match=f"not safe as a file name.*{why}"):
        storage.write(tmp_path / "s", [("ok", b"1"), (key, b"2")], format="folder")
    assert list(tmp_path.iterdir()) == []


def test_folder_refuses_file_folder_clash(tmp_path):
    with pytest.raises(ValueError, match="clashes"):
        storage.write(tmp_path / "s", [("a", b"1"), ("a/b", b"2")], format="folder")
    with pytest.raises(ValueError, match="clashes"):
        storage.write(tmp_path / "t", [("a/b", b"1"), ("a", b"2")], format="folder")


def test_folder_missing_and_truncated_files(tmp_path):
    recs = [(f"c/{i}", b"abc" * 10) for i in range(5)]
    storage.write(tmp_path / "s", recs, format="folder")
    (tmp_path / "s" / "c" / "3").write_bytes(b"abc")
    with pytest.raises(
        TruncatedStoreError,
        match=r"file 'c/3' has 3 bytes, expected 30; first "
        r"affected record 3 'c/3'",
    ):
        storage.verify(tmp_path / "s")
    (tmp_path / "s" / "c" / "3").unlink()
    with pytest.raises(TruncatedStoreError, match="file 'c/3' is missing"):
        storage.verify(tmp_path / "s")
    with pytest.raises(TruncatedStoreError, match="record 3 'c/3' is missing"):
        storage.StoreDataset(tmp_path / "s")[3]
