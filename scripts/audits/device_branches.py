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


# --- rule same-text-every-device (issue 41): device-dependent text outside any `if` ----------
SAME_TEXT_EVERY_DEVICE = "same-text-every-device"
_DEVICE_ATTRS = ("device", "is_cuda")
_COUNTED_CLAIMS = ("from_count", "Count")  # claims.from_count / Claims.record(..., Count(...))


def _mentions_device(expr: ast.AST, names: set[str]) -> bool:
    """Whether the value of ``expr`` depends on a device fact: it reads a name bound to one,
    ``x.device``/``x.is_cuda`` or ``torch.cuda.is_available()``, or it is ``a if <device test>
    else b``. A comparison is left out (``backend == expected``: a bool the cell asserts), but
    not a device test choosing between two texts."""
    if isinstance(expr, ast.IfExp) and _is_device_test(expr.test, names):
        return True
    if isinstance(expr, ast.Compare):
        return False
    if isinstance(expr, ast.Name):
        return expr.id in names
    if isinstance(expr, ast.Attribute) and expr.attr in _DEVICE_ATTRS:
        return True
    if isinstance(expr, ast.Call) and _DEVICE_VALUE.search(ast.unparse(expr.func) + "("):
        return True
    return any(_mentions_device(child, names) for child in ast.iter_child_nodes(expr))


def _bound_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _flow(tree: ast.Module, names: set[str], derived: set[str]) -> None:
    """Update ``derived``, in source order, with the names bound to a value computed directly
    from the device (``copies = count(lambda: x.to(device))``); a name bound again from anything
    else leaves it. Not transitive: a value computed from such a name is not followed."""
    binds = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            binds.append((node.lineno, node.col_offset, targets, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            where = node.target
            binds.append((where.lineno, where.col_offset, [node.target], node.iter))
    for _, _, targets, value in sorted(binds, key=lambda b: (b[0], b[1])):
        bound = set().union(*(_bound_names(t) for t in targets))
        if _mentions_device(value, names):  # direct: a count of work done on the device
            derived |= bound
        else:
            derived -= bound


def _counted_claims_in_branches(tree: ast.Module, names: set[str]) -> list[int]:
    """Lines of counted claims (``claims.from_count``, a ``claims.Count`` passed to
    ``Claims.record``, ``Claim`` without ``measured=True``) made inside a branch on the
    device: the claims table prints their evidence, compared."""
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and _is_device_test(node.test, names)):
            continue
        for call in ast.walk(ast.Module(body=node.body + node.orelse, type_ignores=[])):
            if not isinstance(call, ast.Call):
                continue
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            measured = [k.value for k in call.keywords if k.arg == "measured"]
            counted_claim = name == "Claim" and not (
                measured and isinstance(measured[0], ast.Constant) and measured[0].value is True
            )
            if name in _COUNTED_CLAIMS or counted_claim:
                lines.append(call.lineno)
    return sorted(set(lines))


def device_text_problems(
    cell: int, src: str, names: set[str], derived: set[str], *, compared: bool = True
) -> list[str]:
    """Rule ``same-text-every-device``: a compared cell prints the same text on every device,
    wherever the device enters, not only inside an ``if`` (issue 41). It finds

    - a ``print``/``display`` (other than one ``[hardware] `` line) whose arguments read a
      device fact (``f"({device}: ...)"``, ``"copies" if device == "cuda" else "none"``);
    - a ``why=`` text (printed in a compared verdict table) built from a value computed from
      the device (``copies = count(lambda: x.to(device))``, tracked from cell to cell in
      ``derived``, which this call updates);
    - a counted claim made inside a branch on the device (its evidence line is compared,
      while the other side prints another; a GPU-only fact is a ``measured=True`` claim).

    ``names``: the names bound to a device fact so far (:func:`device_names`). With
    ``compared=False`` (an ``nbval-ignore-output`` cell) only ``derived`` is updated.
    """
    tree = python_tree(src)
    if tree is None:
        return []
    names = set(names)
    _flow(tree, names, derived)
    if not compared:
        return []
    problems = []
    rule = f"(rule {SAME_TEXT_EVERY_DEVICE}: print it on a masked line or in an uncompared cell)"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("print", "display"):
            first = node.args[0] if node.args else None
            if _hardware_line(node) or (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value.startswith(_HARDWARE.strip())
            ):
                continue  # a [hardware] line: masked
            args = list(node.args) + [k.value for k in node.keywords if k.arg is None]
            if any(_mentions_device(a, names) for a in args):
                problems.append(
                    f"cell {cell}: line {node.lineno} prints text that depends on the device "
                    + rule
                )
        for k in node.keywords:
            if k.arg == "why" and _mentions_device(k.value, names | derived):
                problems.append(
                    f"cell {cell}: the why text at line {k.value.lineno} is built from a value "
                    f"that depends on the device, and a verdict table prints it {rule}"
                )
    for line in _counted_claims_in_branches(tree, names):
        problems.append(
            f"cell {cell}: a counted claim at line {line} is made on one side of a branch on the "
            f"device: its evidence line is compared {rule}"
        )
    return problems
