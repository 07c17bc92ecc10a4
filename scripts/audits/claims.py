"""Rules ``claims-table``, ``claims-in-tip`` and ``roof-upper-bound`` of
``scripts/audits/notebooks.py`` (issue 29: advice is a claim this run decides).

- ``claims-table``: a chapter prints its claims table (``tricks_helpers.claims.Claims.table``)
  in its stored outputs, so every piece of advice it gives is decided on the page.
- ``claims-in-tip``: the tip on the first screen shows this run's clause (the
  ``{glue:text}`claims-NN``` role in the title cell, glued by ``Claims.glue`` in a stored
  output), and every claim the stored table prints as ``NOT HELD HERE`` is named, in the words
  of its advice, in that glued clause: a stored run that contradicts a claim whose condition
  holds here fails the audit unless the tip says it did not hold here.
- ``claims-cell-size``: no code cell holds more than :data:`MAX_CLAIM_LINES` lines of claim
  declarations (the ``record`` and ``add`` calls of a chapter's ``Claims``), and the cell that
  prints the claims table is no longer than that: a claim is declared in the cell that prints
  its evidence, and the table only prints what was declared (issue 38: the old shape was one
  hidden cell of 71-177 lines at the end, reaching back to names defined far above).
- ``roof-upper-bound``: no stored output prints a point above its roof: a measured share of a
  limit, ceiling, roof, bandwidth or peak above 100% (``~102% of the ceiling``) means the roof
  was not the highest rate this machine reached, so it is not a limit.

Only the standard library is used (the advice is quoted as the tip quotes it, by
``tricks_helpers.quoting``, which imports nothing else).
"""

from __future__ import annotations

import ast
import re

from scripts.book.notebook_cells import code_outputs, output_text, python_tree, stored_text
from tricks_helpers.quoting import quoted  # the tip's own quoting; stdlib only, no torch

CLAIMS_TABLE = "claims-table"
CLAIMS_IN_TIP = "claims-in-tip"
ROOF_UPPER_BOUND = "roof-upper-bound"
CLAIMS_CELL_SIZE = "claims-cell-size"
#: The most lines of claim declarations one code cell may hold (``book.record(...)`` and
#: ``book.add(...)`` calls, counted from their first line to their last), and the most lines of
#: the cell that prints the claims table. The stored book's largest is about 41 (chapter 04).
MAX_CLAIM_LINES = 45
_DECLARE = ("record", "add")

_HEADER = "claims decided by this run:"
_NOT_HELD_ROW = re.compile(r"^  NOT HELD HERE +(?P<key>[A-Za-z0-9-]+): (?P<advice>.*) \[[^\]]*\]$")
_GLUE_ROLE = re.compile(r"\{glue:text\}`(?P<name>claims-[\w-]+)`")
_GLUE_MIME = "application/papermill.record/text/plain"
_OVER_ROOF = re.compile(
    r"~(?P<pct>[0-9][0-9.,]*)%\s*(?:of\s+(?:the\s+|this\s+machine's\s+|its\s+)?)"
    r"(?:[\w-]+\s+){0,3}?(?P<what>limit|ceiling|roof|bandwidth|peak)\b",
    flags=re.I,
)


def claim_rows(cells: list[dict]) -> tuple[bool, list[tuple[str, str]]]:
    """Whether a claims table is stored, and the key and advice of each claim it prints NOT
    HELD HERE."""
    found, not_held = False, []
    for _, out in code_outputs(cells):
        for line in output_text(out).splitlines():
            found = found or line.startswith(_HEADER)
            row = _NOT_HELD_ROW.match(line)
            if row:
                not_held.append((row.group("key"), row.group("advice")))
    return found, not_held


def glued_clauses(cells: list[dict]) -> dict[str, str]:
    """Every text the notebook glued (myst-nb), by name, as the stored output holds it."""
    found = {}
    for _, out in code_outputs(cells):
        name = out.get("metadata", {}).get("scrapbook", {}).get("name")
        value = out.get("data", {}).get(_GLUE_MIME)
        if name and value is not None:
            found[name] = stored_text(value).strip("'\"")
    return found


def claims_problems(cells: list[dict]) -> list[str]:
    """Rules ``claims-table`` and ``claims-in-tip`` for one notebook's cells."""
    problems = []
    has_table, not_held = claim_rows(cells)
    if not has_table:
        problems.append(
            f"{CLAIMS_TABLE}: no claims table in the stored outputs "
            "(print tricks_helpers.claims.Claims.table() at the chapter's end)"
        )
    title = next(
        (
            stored_text(c.get("source"))
            for c in cells
            if c.get("cell_type") == "markdown" and stored_text(c.get("source")).startswith("# ")
        ),
        "",
    )
    role = _GLUE_ROLE.search(title)
    if role is None:
        problems.append(
            f"{CLAIMS_IN_TIP}: the tip shows no run clause "
            "({glue:text}`claims-NN` in the title cell)"
        )
        return problems
    clause = glued_clauses(cells).get(role.group("name"))
    if clause is None:
        problems.append(
            f"{CLAIMS_IN_TIP}: the tip names {role.group('name')!r} but no stored output "
            "glued it (Claims.glue)"
        )
        return problems
    named = clause.split("not held here:", 1)[1] if "not held here:" in clause else ""
    named = named.split("; undecided:", 1)[0]  # "; undecided: ..." follows (tricks_helpers.claims)
    for key, advice in not_held:
        if quoted(advice) not in named:  # named in words, not by its key
            problems.append(
                f"{CLAIMS_IN_TIP}: the stored run did not bear out claim {key!r}, "
                "and the tip does not say so"
            )
    return problems


def roof_problems(cells: list[dict]) -> list[str]:
    """Rule ``roof-upper-bound``: no stored output prints a share above 100% of a roof."""
    problems = []
    for i, out in code_outputs(cells):
        for line in output_text(out).splitlines():
            for hit in _OVER_ROOF.finditer(line):
                pct = float(hit.group("pct").replace(",", ""))
                if pct > 100:
                    problems.append(
                        f"cell {i}: {ROOF_UPPER_BOUND}: a point at {pct:g}% of its "
                        f"{hit.group('what')}: a roof is the highest rate measured here "
                        f"({line.strip()[:70]})"
                    )
    return problems


def _claims_names(trees: list[ast.Module]) -> set[str]:
    """The names a chapter binds its ``Claims`` to (``book = claims.Claims("01 · ...")``)."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                func = node.value.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called == "Claims":
                    names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _calls_on(tree: ast.Module, names: set[str], methods: tuple[str, ...]) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in methods
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in names
    ]


def claim_lines(tree: ast.Module, names: set[str]) -> int:
    """How many lines of ``tree`` declare claims: the lines the ``record``/``add`` calls on a
    ``Claims`` named in ``names`` span (a line shared by two calls counts once)."""
    lines: set[int] = set()
    for call in _calls_on(tree, names, _DECLARE):
        lines.update(range(call.lineno, (call.end_lineno or call.lineno) + 1))
    return len(lines)


def claims_size_problems(cells: list[dict]) -> list[str]:
    """Rule ``claims-cell-size``: a code cell declaring more than :data:`MAX_CLAIM_LINES` lines
    of claims, or a claims-table cell longer than that."""
    trees = []
    for i, cell in enumerate(cells):
        if cell.get("cell_type") == "code":
            src = stored_text(cell.get("source"))
            tree = python_tree(src)
            if tree is not None:
                trees.append((i, src, tree))
    names = _claims_names([tree for _, _, tree in trees])
    problems = []
    for i, src, tree in trees:
        declared = claim_lines(tree, names)
        if declared > MAX_CLAIM_LINES:
            problems.append(
                f"cell {i}: {declared} lines of claim declarations, more than {MAX_CLAIM_LINES}: "
                f"declare each claim in the cell that prints its evidence (rule {CLAIMS_CELL_SIZE})"
            )
        length = len(src.strip().splitlines())
        if _calls_on(tree, names, ("table",)) and length > MAX_CLAIM_LINES:
            problems.append(
                f"cell {i}: the claims table cell is {length} lines, more than {MAX_CLAIM_LINES}: "
                f"it only prints what was declared (rule {CLAIMS_CELL_SIZE})"
            )
    return problems
