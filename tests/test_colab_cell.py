"""Tests of scripts/colab_cell.py: the Colab set-up cell, from one configured place."""

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import colab_cell  # scripts/ is on pytest's pythonpath (pyproject.toml)


def test_source_comes_from_config(tmp_path):
    cfg = tmp_path / "_config.yml"
    cfg.write_text("repository:\n  url: https://example.org/me/book/\n  branch: dev\n")
    src = colab_cell.cell_source(cfg)
    assert 'REPO = "https://example.org/me/book"' in src
    assert 'pkg = f"tricks_helpers[book] @ git+{REPO}@dev"' in src
    compile(src, "cell", "exec")
    assert max(len(line) for line in src.splitlines()) <= 88, "keep the cell readable on the page"


@pytest.mark.parametrize("text", ["title: x\n", "repository:\n  url: git@host:me/book\n"])
def test_bad_config_is_refused(tmp_path, text):
    cfg = tmp_path / "_config.yml"
    cfg.write_text(text)
    with pytest.raises(ValueError, match="repository.url must be an https URL"):
        colab_cell.cell_source(cfg)


def test_stamp_inserts_once_before_the_first_code_cell_then_updates():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"),
                                         nbformat.v4.new_code_cell("x = 1")])
    assert colab_cell.stamp(nb, "print('a')") is True
    assert [c.source for c in nb.cells] == ["# T", "print('a')", "x = 1"]
    assert colab_cell.stamp(nb, "print('a')") is False
    assert colab_cell.stamp(nb, "print('b')") is True
    assert [c.source for c in nb.cells] == ["# T", "print('b')", "x = 1"]


def test_cell_installs_nothing_where_the_package_is_present():
    out = subprocess.run([sys.executable, "-c", colab_cell.cell_source()], capture_output=True,
                         text=True, check=True).stdout
    assert out == "tricks_helpers is already installed: nothing to install\n"


def test_every_chapter_has_the_current_cell_first():
    paths = colab_cell.chapter_notebooks()
    assert paths, "no chapter notebooks found"
    source = colab_cell.cell_source()
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert colab_cell.TAG in first.metadata.get("tags", []), f"{path.name}: no set-up cell first"
        assert first.source == source, f"{path.name}: stale set-up cell (scripts/colab_cell.py)"
