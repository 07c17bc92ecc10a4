"""Reading a stored notebook's cells as the audits and the results page do: one home for each.

A notebook's JSON stores a cell's source and a stream's text either as one string or as a list
of lines; a code cell may hold IPython lines (``%magic``, ``!shell``) that are not Python. Used
by ``audit_notebooks``, ``audit_claims``, ``audit_recipes``, ``audit_device_branches``,
``colab_runtime``, ``import_graph`` and ``results_rows``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

__all__ = [
    "stored_text",
    "output_text",
    "code_outputs",
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
