"""Rules of ``scripts/audits/notebooks.py`` on a code cell's source (issues 20, 27).

- ``one-import-form`` (:func:`import_problems`): a chapter imports helpers only as ``from
  tricks_helpers import a, b, c``, once, in its set-up cell;
- a ``bench.measure``/``compare``/``compare_many`` call without ``device=``
  (:func:`timing_calls_without_device`): the device of a timing comes from what is timed;
- ``measured-table`` (:func:`padded_measured_values`): a measured value is never aligned by
  hand in an f-string; measured rows go through ``bench.measured_table``.
"""

from __future__ import annotations

import ast
import re

from scripts.book.notebook_cells import python_tree

__all__ = [
    "ONE_IMPORT_FORM",
    "MEASURED_TABLE",
    "helper_imports",
    "import_problems",
    "timing_calls_without_device",
    "padded_measured_values",
]

ONE_IMPORT_FORM = "one-import-form: `from tricks_helpers import a, b`, once, in the set-up cell"
_TIMING_CALLS = ("measure", "compare", "compare_many")


def helper_imports(src: str) -> list[ast.Import | ast.ImportFrom]:
    """The statements of a cell that import ``tricks_helpers`` (code only: text in a string,
    such as a script handed to a subprocess, is not an import of this kernel)."""
    tree = python_tree(src)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if (node.module or "").split(".")[0] == "tricks_helpers":
                found.append(node)
        elif isinstance(node, ast.Import):
            if any(a.name.split(".")[0] == "tricks_helpers" for a in node.names):
                found.append(node)
    return sorted(found, key=lambda n: n.lineno)


def import_problems(cell: int, src: str, seen: int | None) -> list[str]:
    """What breaks the one import form in one cell's source (``seen``: cell of the first import).

    Returns:
        One message per offending statement, naming the rule ``one-import-form``.
    """
    problems = []
    for node in helper_imports(src):
        statement = " ".join((ast.get_source_segment(src, node) or ast.unparse(node)).split())
        if isinstance(node, ast.Import) or node.module != "tricks_helpers":
            problems.append(f"cell {cell}: {statement!r} breaks {ONE_IMPORT_FORM}")
        elif any(a.asname for a in node.names):
            problems.append(f"cell {cell}: alias in {statement!r} breaks {ONE_IMPORT_FORM}")
        elif seen is not None:
            problems.append(
                f"cell {cell}: second import of the package (first in cell {seen}) "
                f"breaks {ONE_IMPORT_FORM}"
            )
        seen = cell if seen is None else seen
    return problems


def timing_calls_without_device(src: str) -> list[str]:
    """Names of the ``bench`` timing calls in ``src`` that pass no ``device=`` keyword.

    Lines of IPython syntax (``%magic``, ``!shell``) are blanked first; a cell that still is
    not Python is not checked (nbval reports it when it runs).
    """
    tree = python_tree(src)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _TIMING_CALLS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "bench"
            and not any(k.arg in ("device", None) for k in node.keywords)
        ):
            found.append(f"bench.{node.func.attr} (line {node.lineno})")
    return found


MEASURED_TABLE = "measured-table: measured rows go through bench.measured_table"
_MEASURED_CALLS = {"fmt_time", "fmt_measured", "Measured"}
# a format spec that sets a width: [[fill]align][sign][z][#][0]width (the 0 flag alone is none)
_SPEC_WIDTH = re.compile(r"(?:.?[<>=^])?[+\- ]?z?#?0?[1-9]")


def _pads_to_a_width(field: ast.FormattedValue) -> bool:
    spec = field.format_spec
    if not isinstance(spec, ast.JoinedStr):
        return False
    text = ""
    for part in spec.values:
        if isinstance(part, ast.FormattedValue):  # {claim:{width}}: a width from a variable
            return "." not in text
        text += str(part.value)
    return bool(_SPEC_WIDTH.match(text))


def _is_measured(field: ast.FormattedValue) -> bool:
    for node in ast.walk(field.value):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in _MEASURED_CALLS:
                return True
    return False


def padded_measured_values(src: str) -> list[str]:
    """Rule ``measured-table``: the f-strings of ``src`` that align a measured value by hand.

    A field holds a measured value when it calls ``fmt_time``, ``fmt_measured`` or
    ``Measured``, or follows a ``~``. An f-string (implicitly concatenated parts count as one)
    is flagged when such a field is padded to a width, or when a padded field comes after
    one (its place then moves with the measured digits). A padded label *before* the measured
    values is not flagged: it moves nothing the sanitize file does not mask. A cell that is not
    Python (after blanking IPython lines) is not checked.

    Returns:
        ``"line N"`` for each flagged f-string, in source order.
    """
    tree = python_tree(src)
    if tree is None:
        return []
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        seen_measured = False
        for before, part in zip([None, *node.values], node.values):
            if not isinstance(part, ast.FormattedValue):
                continue
            tilde = isinstance(before, ast.Constant) and str(before.value).endswith("~")
            measured = tilde or _is_measured(part)
            if _pads_to_a_width(part) and (measured or seen_measured):
                found.add(node.lineno)
            seen_measured = seen_measured or measured
    return [f"line {n}" for n in sorted(found)]
