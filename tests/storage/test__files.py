"""Tests of tricks_helpers.storage._files: hidden temporary names, removal, hashing, handles."""

from __future__ import annotations

import copy
import hashlib
import io
import os
import pickle

from tricks_helpers.storage import _files


def test_temporary_name_is_a_hidden_sibling_naming_host_and_process(tmp_path):
    target = tmp_path / "store"
    a, b = _files.temporary_name(target), _files.temporary_name(target, "old")
    assert a.parent == b.parent == tmp_path
    assert a.name.startswith(".store.tmp-") and b.name.startswith(".store.old-")
    assert f"-{_files.HOST}-{os.getpid()}-" in a.name
    assert a != _files.temporary_name(target), "a new name each call"


def test_remove_tree_removes_files_trees_and_links_without_following(tmp_path):
    (tmp_path / "tree" / "deep").mkdir(parents=True)
    (tmp_path / "tree" / "deep" / "f").write_bytes(b"x")
    (tmp_path / "file").write_bytes(b"y")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "data").write_bytes(b"z")
    (tmp_path / "link").symlink_to(kept, target_is_directory=True)
    for name in ("tree", "file", "link", "absent"):
        assert _files.remove_tree(tmp_path / name) is None
        assert not os.path.lexists(tmp_path / name)
    assert (kept / "data").read_bytes() == b"z", "a link is removed, not what it points to"


def test_remove_tree_reports_what_it_could_not_remove(tmp_path, monkeypatch):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f").write_bytes(b"x")

    def rmtree_denied(path, onerror):
        onerror(os.unlink, str(path), (PermissionError, PermissionError(13, "denied"), None))

    monkeypatch.setattr(_files.shutil, "rmtree", rmtree_denied)
    error = _files.remove_tree(tmp_path / "tree")
    assert isinstance(error, PermissionError) and (tmp_path / "tree" / "f").exists()
    monkeypatch.setattr(_files.shutil, "rmtree", lambda path, onerror: None)  # silent no-op
    error = _files.remove_tree(tmp_path / "tree")
    assert isinstance(error, OSError) and "'tree' is still there" in str(error)


def test_hash_file_reads_from_the_start_in_blocks():
    data = bytes(range(256)) * 5000  # 1.2 MiB: more than one block
    f = io.BytesIO(data)
    f.seek(1000)
    assert _files.hash_file(f) == hashlib.sha256(data).hexdigest()
    assert _files.hash_file(io.BytesIO(b"")) == hashlib.sha256(b"").hexdigest()


def test_identity_names_one_file(tmp_path):
    (tmp_path / "a").write_bytes(b"a")
    (tmp_path / "b").write_bytes(b"b")
    os.link(tmp_path / "a", tmp_path / "hard")
    ident = _files.identity
    assert ident((tmp_path / "a").stat()) == ident((tmp_path / "hard").stat())
    assert ident((tmp_path / "a").stat()) != ident((tmp_path / "b").stat())


def test_per_process_opens_once_per_process_and_never_pickles_a_handle(monkeypatch):
    opened, closed = [], []
    handle = _files.PerProcess(lambda: opened.append(1) or len(opened), closed.append)
    assert not handle.is_open
    assert handle.get() == handle.get() == 1 and opened == [1]
    assert handle.is_open
    twin = copy.copy(handle)  # what pickling a dataset for a worker does (__getstate__)
    assert not twin.is_open and twin._handle is None
    assert pickle.loads(pickle.dumps(_files.PerProcess(int)))._handle is None
    pid = os.getpid()
    monkeypatch.setattr(_files.os, "getpid", lambda: pid + 1)  # as in a forked worker
    assert not handle.is_open
    assert handle.get() == 2, "a new process opens its own handle"
    handle.close()
    assert closed == [2] and not handle.is_open
    handle.close()  # closing twice does nothing
    assert closed == [2]
