"""Tests of scripts/book/find_notebooks.py: the one rule for finding pages and chapters."""

from __future__ import annotations

import pytest

from scripts.book import find_notebooks


def test_pages_in_reading_order_at_any_depth(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: A\n    chapters:\n"
        "      - file: book/01_a\n        sections:\n          - file: book/01b.ipynb\n"
        "      - file: book/02_b.md\n  - caption: B\n    chapters:\n      - file: book/03_c\n"
    )
    assert find_notebooks.toc_pages(tmp_path) == [
        "book/intro",
        "book/01_a",
        "book/01b",
        "book/02_b",
        "book/03_c",
    ]


def test_chapter_notebooks_are_the_listed_ipynb_pages(tmp_book, make_notebook):
    root = tmp_book({"02_b": ["# B"], "01_a": ["# A"]})
    make_notebook(root / "book" / "03_unlisted.ipynb", ["# C"])
    assert [p.name for p in find_notebooks.chapter_notebooks(root)] == ["02_b.ipynb", "01_a.ipynb"]
    assert [p.name for p in find_notebooks.unlisted_notebooks(root)] == ["03_unlisted.ipynb"]


def test_notebooks_from_args(tmp_book):
    root = tmp_book({"01_a": ["# A"]})
    assert find_notebooks.notebooks_from_args([], root) == [root / "book" / "01_a.ipynb"]
    named = find_notebooks.notebooks_from_args([str(root / "book" / "01_a.ipynb")], root)
    assert named == [(root / "book" / "01_a.ipynb").resolve()]
    with pytest.raises(FileNotFoundError, match="no such notebook: .*nope.ipynb"):
        find_notebooks.notebooks_from_args(["nope.ipynb"], root)


def test_bad_tocs(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        find_notebooks.toc_pages(tmp_path)
    (tmp_path / "_toc.yml").write_text("format: jb-book\n")
    with pytest.raises(ValueError, match="names no root page"):
        find_notebooks.toc_pages(tmp_path)
    (tmp_path / "_toc.yml").write_text("root: intro\n")
    with pytest.raises(ValueError, match="lists no chapter notebook"):
        find_notebooks.notebooks_from_args([], tmp_path)


def test_the_repository_lists_every_chapter(repo_root):
    """Every notebook under book/ is a page of the book (else it is never built or linked)."""
    assert find_notebooks.chapter_notebooks(repo_root), "no chapters in _toc.yml"
    assert find_notebooks.unlisted_notebooks(repo_root) == []
