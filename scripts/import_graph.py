"""The import graph of ``tricks_helpers``: floors, arrows, loops and re-exported names.

Read from the source with :mod:`ast` (nothing is imported): every ``import`` of a
``tricks_helpers`` module anywhere in a file, function bodies included, is an arrow. A module's
floor is 0 when it imports no sibling, else one above the highest floor it imports.

    python scripts/import_graph.py [PACKAGE_DIR]   # prints floors and arrows

``tests/test_package_layout.py`` asserts on it: no loop, and no module re-exports a sibling's
names except a package face (an ``__init__``) handing on names of its own modules.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT_NAME = "tricks_helpers"
DEFAULT_DIR = Path(__file__).resolve().parent.parent / ROOT_NAME


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
    out.pop(name, None)
    return out


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
