"""scripts/book/notebook_cells.py: reading stored cells as the audits and results page do."""

from __future__ import annotations

import ast

from scripts.audits import claims as audit_claims
from scripts.audits import notebooks as audit_notebooks
from scripts.audits import recipes as audit_recipes
from scripts.book import notebook_cells as nc
from scripts.compat import outcome as compat_outcome


def test_stored_text_joins_lists_and_reads_missing_values_as_empty():
    assert nc.stored_text(["a\n", "b"]) == "a\nb"
    assert nc.stored_text("one") == "one"
    assert nc.stored_text(None) == "" and nc.stored_text([]) == ""


def test_output_text_of_each_output_type():
    assert nc.output_text({"output_type": "stream", "name": "stdout", "text": ["x\n", "y"]}) == (
        "x\ny"
    )
    error = {"output_type": "error", "traceback": ["Traceback", "ValueError: no"]}
    assert nc.output_text(error) == "Traceback\nValueError: no"
    result = {"output_type": "execute_result", "data": {"text/plain": ["42"]}}
    assert nc.output_text(result) == "42"
    assert nc.output_text({"output_type": "display_data", "data": {"image/png": "..."}}) == ""


def test_code_outputs_and_tags():
    cells = [
        {"cell_type": "markdown", "source": "# t", "outputs": [{"text": "never"}]},
        {"cell_type": "code", "source": "", "outputs": [{"a": 1}, {"b": 2}]},
        {"cell_type": "code", "source": "", "metadata": {"tags": ["recipe", "hide-input"]}},
    ]
    assert list(nc.code_outputs(cells)) == [(1, {"a": 1}), (1, {"b": 2})]
    assert nc.cell_tags(cells[2]) == {"recipe", "hide-input"} and nc.cell_tags(cells[1]) == set()


def test_error_cell_counts_code_cells_from_one_and_keeps_the_whole_first_line():
    long = "x" * 500
    cells = [
        {"cell_type": "markdown", "source": "# t"},
        {"cell_type": "code", "source": "", "outputs": [{"output_type": "stream", "text": "ok"}]},
        {"cell_type": "code", "source": "", "outputs": []},
        {
            "cell_type": "code",
            "source": "",
            "outputs": [
                {"output_type": "error", "ename": "KeyError", "evalue": [long, "\nsecond"]}
            ],
        },
        {"cell_type": "code", "source": "", "outputs": [{"output_type": "error", "ename": "E"}]},
    ]
    assert nc.error_cell(cells) == (3, "KeyError", long)
    assert nc.error_cell(cells[4:]) == (1, "E", "")
    assert nc.error_cell(cells[:3]) is None and nc.error_cell([]) is None


def test_ipython_lines_are_blanked_and_line_numbers_kept():
    src = "%timeit f()\nx = 1\n  !ls\ny = x"
    assert nc.ipython_blanked(src) == "\nx = 1\n\ny = x"
    tree = nc.python_tree(src)
    assert isinstance(tree, ast.Module) and [n.lineno for n in tree.body] == [2, 4]
    assert nc.python_tree("def (:") is None


def test_the_audits_use_the_one_home():
    for module in (audit_claims, audit_notebooks, audit_recipes, compat_outcome):
        for name in ("_text", "_python_tree", "_tree", "_output_text", "_tags", "_outputs"):
            assert not hasattr(module, name), f"{module.__name__}.{name}"
