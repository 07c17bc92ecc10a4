"""Rules ``recipe-plain``, ``recipe-first`` and ``evidence-folded`` of
``scripts/audits/notebooks.py`` (issue 30: recipe first, evidence folded).

- ``recipe-plain``: a cell tagged ``recipe`` is the plain-PyTorch code a reader copies: it
  imports nothing from ``tricks_helpers`` and uses none of the helper modules the chapter's
  set-up cell imports (``bench.compare(...)``, ``seeding.seed_worker``...).
- ``recipe-first``: every chapter has a recipe cell, and the first one sits within the first
  fifth of the page (counted in cells), right under the tip.
- ``evidence-folded``: a cell that times something (``compare``, ``compare_many``, ``measure``,
  ``comparison_from_times``) is measuring code: it is tagged ``hide-input`` (Jupyter Book folds
  its code and shows its output) or removed from the page.

:func:`shown_code_lines` counts the non-blank code lines a reader sees expanded.

Only the standard library is used.
"""

from __future__ import annotations

import ast

from scripts.book.notebook_cells import cell_tags, python_tree, stored_text

RECIPE_PLAIN = "recipe-plain"
RECIPE_FIRST = "recipe-first"
EVIDENCE_FOLDED = "evidence-folded"

RECIPE_TAG = "recipe"
FOLDED_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
FIRST_SHARE = 0.2
_TIMING = {"compare", "compare_many", "measure", "comparison_from_times"}


def helper_modules(cells: list[dict]) -> set[str]:
    """The names a chapter binds from ``tricks_helpers`` (``from tricks_helpers import a, b``)."""
    names = set()
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        tree = python_tree(stored_text(cell.get("source")))
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "tricks_helpers"
            ):
                names |= {a.asname or a.name for a in node.names}
    return names


def recipe_problems(cells: list[dict]) -> list[str]:
    """Rules ``recipe-plain`` and ``recipe-first`` for one notebook's cells."""
    helpers = helper_modules(cells)
    problems, first = [], None
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or RECIPE_TAG not in cell_tags(cell):
            continue
        first = i if first is None else first
        src = stored_text(cell.get("source"))
        tree = python_tree(src)
        if tree is None:
            problems.append(f"cell {i}: {RECIPE_PLAIN}: the recipe is not Python")
            continue
        used = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                mods += [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if any(m.split(".")[0] == "tricks_helpers" for m in mods):
                    used.add("tricks_helpers")
            elif isinstance(node, ast.Name) and node.id in helpers:
                used.add(node.id)
        if used:
            problems.append(
                f"cell {i}: {RECIPE_PLAIN}: the recipe uses the book's helpers "
                f"({', '.join(sorted(used))}); a reader copies plain PyTorch"
            )
    if first is None:
        problems.append(f"{RECIPE_FIRST}: no cell tagged 'recipe' (the code a reader copies)")
    elif cells and first / len(cells) > FIRST_SHARE:
        problems.append(
            f"cell {first}: {RECIPE_FIRST}: the first recipe is cell {first} of {len(cells)}; "
            f"put it within the first fifth, under the tip"
        )
    return problems


def timing_calls(src: str) -> list[str]:
    """The timing functions a cell calls (``bench.compare(...)`` -> ``compare``)."""
    tree = python_tree(src)
    found = []
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _TIMING:
                found.append(name)
    return found


def folding_problems(cells: list[dict]) -> list[str]:
    """Rule ``evidence-folded``: a cell that times something has its code folded."""
    problems = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or cell_tags(cell) & FOLDED_TAGS:
            continue
        calls = timing_calls(stored_text(cell.get("source")))
        if calls:
            problems.append(
                f"cell {i}: {EVIDENCE_FOLDED}: times with {calls[0]}() but its code is shown: "
                "tag it hide-input (its output stays visible)"
            )
    return problems


def shown_code_lines(cells: list[dict]) -> int:
    """Non-blank code lines a reader sees expanded on the page (folded and removed cells not
    counted)."""
    return sum(
        sum(1 for line in stored_text(c.get("source")).splitlines() if line.strip())
        for c in cells
        if c.get("cell_type") == "code" and not cell_tags(c) & FOLDED_TAGS
    )
