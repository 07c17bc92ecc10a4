"""Rule ``one-output-per-device`` of ``scripts/audits/notebooks.py`` (issue 33).

The stored outputs are made on a CPU; the same notebook must pass nbval on a GPU runner. A cell
whose output nbval compares may branch on the device only if both sides print the same number
of lines, each one ``[hardware] `` line (which ``nbval_sanitize.cfg`` masks), one per
``print``. Anything else a device branch prints (a verdict line, a second ``[hardware]`` line
on one side only, a line in a loop) goes to a cell tagged ``nbval-ignore-output``, whose
asserts still run. :func:`device_branch_problems` checks one cell; :func:`device_names` finds
the names a cell binds to a device fact (``gpus = torch.cuda.device_count()``), so a later
``if gpus:`` is a device branch too.

What counts as printing: ``print``/``display``, a ``.show()``/``show_error``/
``print_environment`` call, and a ``compare`` call not passed ``show=False``. A helper that
prints some other way is not seen (print its lines through ``print`` in the branch).

Only the standard library is used.
"""

from __future__ import annotations

import ast
import re

from scripts.book.notebook_cells import python_tree

ONE_OUTPUT_PER_DEVICE = "one-output-per-device"
_DEVICE_TEST = re.compile(r"cuda|gpu|device|accelerator", flags=re.I)
_DEVICE_VALUE = re.compile(
    r"torch\.cuda\.(?:is_available|device_count|is_initialized)\(|\bhas_cuda\b|\.is_cuda\b"
)
_HARDWARE = "[hardware] "
_PRINTING_METHODS = ("show", "show_error", "print_environment")


def device_names(src: str) -> set[str]:
    """Names a cell binds to a device fact (``gpus = torch.cuda.device_count()``), so a later
    ``if gpus:`` is known as a device branch by rule ``one-output-per-device``."""
    tree = python_tree(src)
    if tree is None:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            if _DEVICE_VALUE.search(ast.unparse(node.value)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return found


def _is_device_test(test: ast.expr, names: set[str]) -> bool:
    used = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    return bool(_DEVICE_TEST.search(ast.unparse(test)) or used & names)


def _printing_call(node: ast.AST) -> bool:
    """A call that writes to the cell's output: print/display, ``.show()``, ``show_error``, a
    ``compare`` that is not passed ``show=False``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in ("print", "display")
    if isinstance(func, ast.Attribute):
        if func.attr in _PRINTING_METHODS:
            return True
        if func.attr == "compare":
            show = [k.value for k in node.keywords if k.arg == "show"]
            return not (show and isinstance(show[0], ast.Constant) and show[0].value is False)
    return False


def _hardware_line(call: ast.Call) -> bool:
    """``print("[hardware] ...")`` (a literal or f-string) printing exactly one line."""
    if not (isinstance(call.func, ast.Name) and call.func.id == "print"):
        return False
    if len(call.args) != 1 or any(k.arg in ("sep", "end", None) for k in call.keywords):
        return False
    arg = call.args[0]
    parts = arg.values if isinstance(arg, ast.JoinedStr) else [arg]
    texts = [p.value for p in parts if isinstance(p, ast.Constant) and isinstance(p.value, str)]
    first = parts[0] if parts else None
    return (
        isinstance(first, ast.Constant)
        and isinstance(first.value, str)
        and first.value.startswith(_HARDWARE)
        and not any("\n" in t for t in texts)
    )


def _branch_lines(stmts: list[ast.stmt], bad: list[int]) -> int | None:
    """Lines a branch prints, or None when the count depends on more than the device (a print
    in a loop, an except clause, or an inner branch whose sides differ). Lines of prints that
    are not one ``[hardware] `` line are appended to ``bad``."""
    total: int | None = 0
    for stmt in stmts:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # defined here, not run here
        if isinstance(stmt, ast.If):
            a, b = _branch_lines(stmt.body, bad), _branch_lines(stmt.orelse, bad)
            n = a if a == b else None
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            n = _branch_lines(stmt.body, bad)
        elif isinstance(stmt, ast.Try):
            n = _branch_lines(stmt.body + stmt.finalbody, bad)
            extra = [s for h in stmt.handlers for s in h.body] + stmt.orelse
            if _branch_lines(extra, bad) != 0:
                n = None
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            n = 0 if _branch_lines(stmt.body + stmt.orelse, bad) == 0 else None
        else:
            calls = [c for c in ast.walk(stmt) if _printing_call(c)]
            bad += [c.lineno for c in calls if not _hardware_line(c)]
            n = len(calls)
        total = None if total is None or n is None else total + n
    return total


def device_branch_problems(cell: int, src: str, names: set[str] = frozenset()) -> list[str]:
    """Rule ``one-output-per-device``: in a cell whose output nbval compares, every branch on
    the device (``torch.cuda.is_available()``, ``device.type == "cuda"``, ``env.has_cuda``, a
    name in ``names`` bound to one) prints the same number of lines on each side, and only
    ``[hardware] `` lines (masked by the sanitize file), one per ``print``: the stored CPU
    output must then match a GPU run line for line (issue 33). Device-specific output goes to
    a cell tagged ``nbval-ignore-output`` (its asserts still run).
    """
    tree = python_tree(src)
    if tree is None:
        return []
    problems = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and _is_device_test(node.test, set(names))):
            continue
        bad: list[int] = []
        a, b = _branch_lines(node.body, bad), _branch_lines(node.orelse, bad)
        test = " ".join(ast.unparse(node.test).split())[:60]
        if bad:
            problems.append(
                f"cell {cell}: the branch on `{test}` (line {node.lineno}) prints a line that "
                f"is not one `[hardware] ` line (line {min(bad)}) in a compared cell "
                f"(rule {ONE_OUTPUT_PER_DEVICE}: tag the cell nbval-ignore-output)"
            )
        elif a is None or b is None or a != b:
            counts = " and ".join("an unknown number" if n is None else str(n) for n in (a, b))
            problems.append(
                f"cell {cell}: the branch on `{test}` (line {node.lineno}) prints {counts} "
                f"line(s) on its two sides in a compared cell (rule {ONE_OUTPUT_PER_DEVICE})"
            )
    return problems
