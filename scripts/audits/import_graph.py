"""The import graph of ``tricks_helpers``: floors, arrows, loops and re-exported names.

Read from the source with :mod:`ast` (nothing is imported): every ``import`` of a
``tricks_helpers`` module anywhere in a file, function bodies included, is an arrow, and so is a
module named in a string: a full dotted name (a module started with ``python -m``, as a
launcher does) or, in a file calling ``importlib.import_module``, the name of one of its own
package's modules (a lazy import, as the storage face does). A module's
floor is 0 when it imports no sibling, else one above the highest floor it imports.

    python -m scripts.audits.import_graph [PACKAGE_DIR]   # prints floors and arrows

``tests/test_package_layout.py`` asserts on it: no loop, no module re-exports a sibling's
names except a package face (an ``__init__``) handing on names of its own modules, and every
module is reached from a chapter's imports (:func:`unreached`): a module no chapter imports,
directly or through another package module, belongs in ``scripts/``.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from scripts.book.notebook_cells import ipython_blanked, stored_text

ROOT_NAME = "tricks_helpers"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / ROOT_NAME


def module_files(package_dir: Path = DEFAULT_DIR) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [ROOT_NAME, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(target: str, modules: dict[str, Path]) -> str | None:
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, set[str]]:
    """Imported module -> the names imported from it (empty for ``import x``), for one file."""
    out: dict[str, set[str]] = {}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(ROOT_NAME) and (m := _resolve(alias.name, modules)):
                    out.setdefault(m, set())
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if not base.startswith(ROOT_NAME):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    out.setdefault(sub, set())
                elif m := _resolve(base, modules):
                    out.setdefault(m, set()).add(alias.asname or alias.name)
    for lazy in _lazy_imports(package, path, modules):
        out.setdefault(lazy, set())
    out.pop(name, None)
    return out


def _lazy_imports(package: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules a file names in a string: full dotted names (``python -m``), and the modules of
    ``package`` it imports by their short name through ``importlib.import_module``."""
    tree = ast.parse(path.read_text(), str(path))
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    names = {s for s in names if isinstance(s, str)}
    found = {s for s in names if s in modules and "." in s}  # not the bare package name
    calls = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "import_module"
        for n in ast.walk(tree)
    )
    if calls:
        found |= {f"{package}.{s}" for s in names if f"{package}.{s}" in modules}
    return found


def graph(package_dir: Path = DEFAULT_DIR) -> dict[str, dict[str, set[str]]]:
    """Module -> {imported module -> names imported from it}."""
    modules = module_files(package_dir)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Every import loop found by a depth-first search (empty when the graph is acyclic)."""
    found, state = [], {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for dep in sorted(edges.get(node, {})):
            if state.get(dep) == "open":
                found.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def floors(edges: dict[str, dict[str, set[str]]]) -> dict[str, int]:
    """Module -> floor (0: imports no sibling). Raises ValueError on a loop."""
    if loops := cycles(edges):
        raise ValueError(f"import loop(s): {loops}")
    memo: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in memo:
            memo[node] = 1 + max((floor(d) for d in edges[node]), default=-1)
        return memo[node]

    return {node: floor(node) for node in edges}


def public_names(path: Path) -> list[str]:
    """The names of a file's ``__all__`` (a literal list or tuple), or ``[]``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(e) for e in node.value.elts]
    return []


def re_exports(package_dir: Path = DEFAULT_DIR) -> list[str]:
    """Names a module lists in ``__all__`` but imports from a sibling, where not allowed.

    Allowed: a face (``pkg/__init__.py``) handing on a name imported from a module inside
    ``pkg``. Everything else listed in an ``__all__`` must be defined in its file.
    """
    modules = module_files(package_dir)
    bad = []
    for name, path in modules.items():
        exported = set(public_names(path))
        is_face = path.name == "__init__.py" and name != ROOT_NAME
        for source, names in imports_of(name, path, modules).items():
            for n in sorted(names & exported):
                if not (is_face and source.startswith(name + ".")):
                    bad.append(f"{name}.{n} (from {source})")
    return bad


def chapter_imports(notebook: Path) -> set[str]:
    """The package modules a chapter notebook imports (``from tricks_helpers import a, b``).

    Every code cell is parsed (IPython ``%`` and ``!`` lines blanked); ``import
    tricks_helpers.x`` and ``from tricks_helpers.x import y`` count too (the audit forbids them
    in a chapter, but a module they name is still reached), and so does a string that is a
    full module name (``"tricks_helpers.ddp_train"``: a module the chapter launches by name).

    Raises:
        ValueError: on a code cell that is not Python.
    """
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    out: set[str] = set()
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code":
            continue
        try:
            tree = ast.parse(ipython_blanked(stored_text(cell["source"])))
        except SyntaxError as exc:
            raise ValueError(f"{notebook.name}: cell {index} is not Python: {exc}") from exc
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(ROOT_NAME):
                out.add(node.module)
                out.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name.startswith(ROOT_NAME))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.fullmatch(rf"{ROOT_NAME}(\.\w+)+", node.value):
                    out.add(node.value)
    return out


def reached(edges: dict[str, dict[str, set[str]]], roots: set[str]) -> set[str]:
    """Every module reached from ``roots`` along the arrows (a module reaches its package too).

    Importing ``tricks_helpers.a.b`` runs ``tricks_helpers`` and ``tricks_helpers.a`` first, so
    a module's parent packages count as reached with it.
    """
    seen: set[str] = set()
    todo = [r for r in roots if r in edges]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        parent = node.rpartition(".")[0]
        todo += [d for d in edges[node] if d not in seen]
        if parent in edges and parent not in seen:
            todo.append(parent)
    return seen


def unreached(package_dir: Path = DEFAULT_DIR, notebooks: list[Path] | None = None) -> list[str]:
    """The package's modules no chapter reaches (sorted): each belongs in ``scripts/``.

    ``notebooks``: the chapters (default: ``_toc.yml``'s, via ``find_notebooks``).
    """
    if notebooks is None:
        from scripts.book.find_notebooks import chapter_notebooks

        notebooks = chapter_notebooks()
    edges = graph(package_dir)
    roots = set().union(*(chapter_imports(nb) for nb in notebooks)) if notebooks else set()
    # `python -m pkg` runs pkg/__main__.py: a package a chapter reaches reaches its entry point
    roots |= {f"{m}.__main__" for m in reached(edges, roots)} & set(edges)
    return sorted(set(edges) - reached(edges, roots))


def render(edges: dict[str, dict[str, set[str]]]) -> str:
    """Floors, highest first, each module with its arrows."""
    short = {m: m.removeprefix(ROOT_NAME + ".") for m in edges}
    levels = floors(edges)
    lines = []
    for level in range(max(levels.values()), -1, -1):
        lines.append(f"floor {level}:")
        for m in sorted(n for n in edges if levels[n] == level):
            deps = ", ".join(short[d] for d in sorted(edges[m]))
            lines.append(f"  {short[m]}" + (f" -> {deps}" if deps else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    g = graph(target)
    loops = cycles(g)
    if loops:
        print("import loops:", *(" -> ".join(c) for c in loops), sep="\n  ")
        for name, deps in g.items():
            print(f"  {name} -> {', '.join(sorted(deps))}")
    else:
        print(render(g))
    print(f"{sum(len(d) for d in g.values())} arrows, {len(g)} modules")
    print("re-exported names outside a face:", *re_exports(target) or ["none"], sep="\n  ")
    if len(sys.argv) == 1:
        print("modules no chapter reaches:", *unreached() or ["none"], sep="\n  ")
