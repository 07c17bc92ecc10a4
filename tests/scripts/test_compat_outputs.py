"""scripts/compat/outputs.py and its place in the compat record and table (issue 41): a compat
run compares outputs as CI does, with only the lines naming the torch release masked."""

from __future__ import annotations

import nbformat
import pytest

from scripts.compat import outcome as compat_outcome
from scripts.compat import outputs, release_lines
from scripts.compat.schema import file_name
from scripts.results import compat as results_compat


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for text, tags in cells:
        cell = nbformat.v4.new_code_cell("x", metadata={"tags": list(tags)})
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in text]
        nb.cells.append(cell)
    return nb


RULES = release_lines.rules()


def test_streams_joined_release_lines_masked_ignored_cells_left_out():
    stored = notebook(
        (["environment\n", "  torch    2.13.0 (build cpu)\n"], ()),
        (["~1.2 ms\n"], ()),
        (["anything\n"], ("nbval-ignore-output",)),
        (["same\n"], ()),
    )
    fresh = notebook(
        (["environment\n  torch    2.10.0+cu128 (build cu128)\n"], ()),  # one stream, masked
        (["~9.9 ms\n"], ()),  # a measured value: masked by the book's sanitize file
        (["else\n"], ("nbval-ignore-output",)),
        (["changed\n"], ()),
    )
    assert outputs.compare(stored, fresh, RULES) == {"cells": 3, "differing": [4]}
    book_only = release_lines.rules(release=False)
    assert outputs.compare(stored, fresh, book_only)["differing"] == [1, 4]


def test_results_errors_and_images_as_nbval_compares_them():
    a, b = notebook(([], ())), notebook(([], ()))
    a.cells[0].outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>", "image/png": "A"})
    ]
    b.cells[0].outputs = [
        nbformat.v4.new_output("display_data", data={"text/plain": "<Figure>", "image/png": "B"})
    ]
    assert outputs.compare(a, b, RULES)["differing"] == []  # images are not compared
    b.cells[0].outputs.append(
        nbformat.v4.new_output("error", ename="E", evalue="boom", traceback=["..."])
    )
    assert outputs.compare(a, b, RULES)["differing"] == [1]
    with pytest.raises(ValueError, match="1 stored code cells, 2 fresh ones"):
        outputs.compare(a, notebook(([], ()), ([], ())), RULES)


def test_entry_line_and_table_cell_say_what_differs():
    item = compat_outcome.entry(
        notebook(([], ())), 3.0, "", "2026-11-27", "c1", {"cells": 40, "differing": [4, 7]}
    )
    assert item["outputs"] == {"cells": 40, "differing": [4, 7]}
    assert compat_outcome.line("09_p", item) == (
        "09_p  ran; outputs: 40 cells compared, 2 differ (code cells 4, 7)  (3.0 s)"
    )
    text = results_compat.cell(item, item["code_sha256"])
    assert text == "ran; outputs 2 of 40 cells differ"
    assert "outputs" not in compat_outcome.entry(None, 1.0, "x", "2026-11-27", "c1")


def test_a_record_of_another_python_is_named_for_it():
    assert file_name("2.10.0") == file_name("2.10.0", "3.11.7") == "torch-2.10.0.json"
    assert file_name("2.10.0", "3.12.1") == "torch-2.10.0-py3.12.json"
    with pytest.raises(ValueError, match="not a Python version"):
        file_name("2.10.0", "../3.12")
