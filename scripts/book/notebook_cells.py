"""Reading a stored notebook's cells as the audits and the results page do: one home for each.

A notebook's JSON stores a cell's source and a stream's text either as one string or as a list
of lines; a code cell may hold IPython lines (``%magic``, ``!shell``) that are not Python. Used
by ``audit_notebooks``, ``audit_claims``, ``audit_recipes``, ``audit_device_branches``,
``colab_runtime``, ``import_graph``, ``results_rows``, ``notebook_run``, ``compat_outcome`` and
``torchao_api``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

__all__ = [
    "stored_text",
    "output_text",
    "code_outputs",
    "error_cell",
    "cell_tags",
    "ipython_blanked",
    "python_tree",
]


def stored_text(value: Any) -> str:
    """A stored string or list of lines as one string (``None`` and a missing value: ``""``)."""
    return "".join(value) if isinstance(value, list) else (value or "")


def output_text(out: dict) -> str:
    """What an output shows as text: a stream's text, an error's traceback, else ``text/plain``."""
    if out.get("output_type") == "stream":
        return stored_text(out.get("text"))
    if out.get("output_type") == "error":
        return "\n".join(out.get("traceback", []))
    return stored_text(out.get("data", {}).get("text/plain"))


def code_outputs(cells: list[dict]) -> Iterator[tuple[int, dict]]:
    """(cell index, output) for every stored output of every code cell."""
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "code":
            for out in cell.get("outputs", []):
                yield i, out


def error_cell(cells: list[dict]) -> tuple[int, str | None, str] | None:
    """The first error output's ``(code cell number, error name, first line of its message)``.

    Code cells are counted from 1 in notebook order, markdown cells not counted: after a
    top-to-bottom run, the ``[N]`` Jupyter shows beside the cell. The message line is uncut
    (``""`` when the message is empty); the name is the output's ``ename`` as stored.

    Returns:
        None when no code cell holds an error output.
    """
    code_cells = [c for c in cells if c.get("cell_type") == "code"]
    for number, cell in enumerate(code_cells, start=1):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                message = stored_text(out.get("evalue")).strip().splitlines()
                return number, out.get("ename"), message[0] if message else ""
    return None


def cell_tags(cell: dict) -> set[str]:
    """A cell's tags (``metadata.tags``)."""
    return set(cell.get("metadata", {}).get("tags", []))


def ipython_blanked(src: str) -> str:
    """A cell's source with its IPython lines (``%magic``, ``!shell``) blanked: line numbers
    stay those of the cell."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines()]
    return "\n".join(lines)


def python_tree(src: str) -> ast.Module | None:
    """A cell's syntax tree, IPython lines blanked; None if the cell is not Python."""
    try:
        return ast.parse(ipython_blanked(src))
    except SyntaxError:
        return None
