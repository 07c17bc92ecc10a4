"""Tests of scripts/release/convert_markers.py: nbval comment markers become cell tags."""

from __future__ import annotations

import nbformat
import pytest
from nbval.plugin import comment_markers, metadata_tags

from scripts.release import convert_markers


def cell(source, tags=()):
    c = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {})
    c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="out\n")]
    c.execution_count = 7
    return c


@pytest.mark.parametrize("marker", sorted(convert_markers.MARKER_TAGS))
def test_each_tag_means_to_nbval_what_its_marker_means(marker):
    meaning = comment_markers[marker]
    assert metadata_tags[convert_markers.MARKER_TAGS[marker]] == meaning


@pytest.mark.parametrize(
    "line, marker",
    [
        ("# NBVAL_IGNORE_OUTPUT", "NBVAL_IGNORE_OUTPUT"),
        ("   ##  NBVAL_SKIP  ", "NBVAL_SKIP"),
        ("# NBVAL_IGNORE_OUTPUT (timings)", None),  # nbval does not honour it either
        ("x = 1  # NBVAL_IGNORE_OUTPUT", None),
        ("print('# NBVAL_SKIP')", None),
    ],
)
def test_marker_of_reads_lines_as_nbval_does(line, marker):
    assert convert_markers.marker_of(line) == marker


def test_convert_cell_moves_markers_to_tags_and_keeps_the_rest():
    c = cell("# NBVAL_IGNORE_OUTPUT\n# timings vary\nprint(1)", tags=["keep"])
    assert convert_markers.convert_cell(c) == (True, [])
    assert c.source == "# timings vary\nprint(1)"
    assert c.metadata["tags"] == ["keep", "nbval-ignore-output"]
    assert c.outputs[0].text == "out\n" and c.execution_count == 7
    assert convert_markers.convert_cell(c) == (False, []), "idempotent"


def test_an_existing_tag_is_not_duplicated():
    c = cell("# NBVAL_RAISES_EXCEPTION\nraise ValueError", tags=["raises-exception"])
    assert convert_markers.convert_cell(c)[0] is True
    assert c.metadata["tags"] == ["raises-exception"]


def test_mentions_that_are_not_markers_are_reported_not_converted():
    c = cell("# NBVAL_IGNORE_OUTPUT (why)\nx")
    assert convert_markers.convert_cell(c) == (False, ["# NBVAL_IGNORE_OUTPUT (why)"])
    assert c.source == "# NBVAL_IGNORE_OUTPUT (why)\nx" and "tags" not in c.metadata


def test_markdown_cells_are_left_alone():
    md = nbformat.v4.new_markdown_cell("# NBVAL_SKIP")
    assert convert_markers.convert_cell(md) == (False, [])


def test_main_check_convert_check(tmp_book, capsys):
    root = tmp_book(
        {
            "01_a": [
                "# 01 · A",
                {"source": "# NBVAL_IGNORE_OUTPUT\nx", "outputs": ["1\n"]},
                {"source": "y", "outputs": ["2\n"]},
            ]
        }
    )
    nb_path = root / "book" / "01_a.ipynb"
    args = [str(nb_path)]
    assert convert_markers.main(["--check", *args]) == 1
    assert convert_markers.main(args) == 0
    assert convert_markers.main(["--check", *args]) == 0
    nb = nbformat.read(nb_path, as_version=4)
    assert nb.cells[1].source == "x" and nb.cells[1].metadata["tags"] == ["nbval-ignore-output"]
    assert "tagged cells 1" in capsys.readouterr().out


def test_main_fails_on_leftovers(tmp_book):
    root = tmp_book({"01_a": ["# 01 · A", {"source": "# NBVAL_SKIP: slow\nx", "outputs": []}]})
    assert convert_markers.main([str(root / "book" / "01_a.ipynb")]) == 1
