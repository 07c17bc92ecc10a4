"""Record which names and keywords of chapter 07 each torchao release has (``torchao_api.json``).

    python -m scripts.compat.torchao_api 0.13.0 0.14.1 ... 0.18.0   download, write the record
    python -m scripts.compat.torchao_api --wheels DIR                read the wheels in DIR

Each wheel is fetched with ``pip download --no-deps torchao==X`` (nothing is installed or
imported) and its Python sources are read with :mod:`ast`:

- names: a name counts as present when the module's source binds it (``import``/``from ...
  import``, ``def``, ``class``, assignment) or, for a submodule, when its file exists;
- keywords: the keyword arguments chapter 07 passes to each torchao callable it imports
  (:func:`notebook_keywords`, read from the notebook's code cells) count as present when the
  callable's signature in the wheel accepts them (:func:`accepted_keywords`: a function's
  parameters, a class's ``__init__`` or dataclass fields, following ``from ... import`` and
  simple base classes inside the wheel; a ``**kwargs`` accepts every keyword).

``tests/scripts/test_torchao_api.py`` checks the Colab cell's torchao table
(``scripts/release/colab_cell.py``), the ``book`` extra's floor and
``tricks_helpers.quantization.TORCHAO_NEEDED`` against this record, and that
:data:`CHAPTER_07_IMPORTS` and the recorded keywords are what chapter 07 imports and passes.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from scripts.book.find_notebooks import ROOT
from scripts.book.notebook_cells import ipython_blanked

RECORD = Path(__file__).resolve().parent / "torchao_api.json"
CHAPTER_07 = ROOT / "book" / "07_quantization.ipynb"

#: module -> names chapter 07 imports from it (``from module import name``).
CHAPTER_07_IMPORTS: dict[str, list[str]] = {
    "torchao.prototype.quantization.int4": ["PrototypeInt4WeightOnlyConfig"],
    "torchao.quantization": [
        "Float8DynamicActivationFloat8WeightConfig",
        "Int4WeightOnlyConfig",
        "Int8DynamicActivationInt8WeightConfig",
        "Int8WeightOnlyConfig",
        "IntxWeightOnlyConfig",
        "quantize_",
    ],
    "torchao.quantization.pt2e.quantize_pt2e": ["convert_pt2e", "prepare_pt2e"],
    "torchao.quantization.pt2e.quantizer": ["x86_inductor_quantizer"],
    "torchao.quantization.qat": ["IntxFakeQuantizeConfig", "QATConfig"],
}


def bound_names(source: str) -> set[str]:
    """The names a module's top level binds (imports, defs, classes, assignments)."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def names_in_wheel(wheel: Path, imports: dict[str, list[str]] = CHAPTER_07_IMPORTS) -> list[str]:
    """The ``module.name`` entries of ``imports`` that the wheel provides, sorted.

    Raises:
        ValueError: if the file is not a torchao wheel.
    """
    if not zipfile.is_zipfile(wheel):
        raise ValueError(f"torchao_api: {wheel} is not a wheel")
    with zipfile.ZipFile(wheel) as zf:
        files = set(zf.namelist())
        present = []
        for module, names in imports.items():
            base = module.replace(".", "/")
            init = next((p for p in (f"{base}/__init__.py", f"{base}.py") if p in files), None)
            source = zf.read(init).decode("utf-8") if init else ""
            bound = bound_names(source) if source else set()
            for name in names:
                submodule = f"{base}/{name}.py" in files or f"{base}/{name}/__init__.py" in files
                if name in bound or submodule:
                    present.append(f"{module}.{name}")
    return sorted(present)


def notebook_keywords(notebook: Path = CHAPTER_07) -> dict[str, list[str]]:
    """The keywords a notebook passes to each torchao callable it imports and calls.

    The callables are the names its code cells import ``from torchao...`` (under their
    ``as`` name too); a call counts when its callee is one of them, by name. Magic lines
    (``%``, ``!``) are blanked before parsing (``notebook_cells.ipython_blanked``), so line
    numbers are the cell's own.

    Returns:
        ``module.Name`` -> the sorted keywords passed to it in any call (``[]`` when it is
        called with positional arguments only), sorted by name.

    Raises:
        ValueError: on a call that unpacks ``**mapping`` into a torchao callable (its
            keywords cannot be read from the source: pass them by name).
    """
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    trees = [ast.parse(ipython_blanked(c.source)) for c in nb.cells if c.cell_type == "code"]
    local: dict[str, str] = {}  # name in the notebook -> module.Name in torchao
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torchao"):
                for alias in node.names:
                    local[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found: dict[str, set[str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                qualified = local.get(node.func.id)
                if qualified is None:
                    continue
                keywords = found.setdefault(qualified, set())
                for kw in node.keywords:
                    if kw.arg is None:
                        raise ValueError(
                            f"torchao_api: a call of {node.func.id} (line {node.lineno} of its "
                            "cell) unpacks **keywords, which cannot be checked: pass them by name"
                        )
                    keywords.add(kw.arg)
    return {name: sorted(kws) for name, kws in sorted(found.items())}


def _module_file(files: dict[str, str], module: str) -> str | None:
    base = module.replace(".", "/")
    return next((p for p in (f"{base}/__init__.py", f"{base}.py") if p in files), None)


def _absolute(module: str, path: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``import from`` inside ``module`` (file ``path``) names."""
    if not node.level:
        return node.module or ""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    parts = package.split(".")
    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
    return ".".join(parts + ([node.module] if node.module else []))


def _definition(
    files: dict[str, str], module: str, name: str, depth: int = 0
) -> tuple[str, str, ast.AST] | None:
    """Where ``module.name`` is defined in the wheel: (module, file, its def/class node).

    Follows ``from ... import name`` and ``name = other`` aliases, at a module's top level
    or inside its top-level ``if``/``try`` blocks; ``None`` when the trail leaves the wheel.
    """
    path = _module_file(files, module)
    if path is None or depth > 12:
        return None
    body = list(ast.parse(files[path]).body)
    for node in body:  # top-level if/try blocks (version switches) count as top level
        if isinstance(node, ast.If | ast.Try):
            body += node.body + node.orelse + getattr(node, "handlers", [])
            body += [n for h in getattr(node, "handlers", []) for n in h.body]
    for node in body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
            return module, path, node
    for node in body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = _absolute(module, path, node)
                    return _definition(files, source, alias.name, depth + 1)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return _definition(files, module, node.value.id, depth + 1)
    return None


def _params(fn: ast.FunctionDef, *, method: bool) -> set[str] | None:
    """Keyword-passable parameters of a function; ``None`` when it takes ``**kwargs``."""
    if fn.args.kwarg is not None:
        return None
    names = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    return set(names[1:] if method and names else names)


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for deco in cls.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Name | ast.Attribute):
            if (target.id if isinstance(target, ast.Name) else target.attr) == "dataclass":
                return True
    return False


def _fields(cls: ast.ClassDef) -> list[str]:
    return [
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and "ClassVar" not in ast.unparse(n.annotation)
    ]


def _signature(
    files: dict[str, str], module: str, path: str, node: ast.AST, depth: int = 0
) -> set[str] | None:
    """Keywords a def or class accepts (``None``: any, through ``**kwargs``)."""
    if isinstance(node, ast.FunctionDef):
        return _params(node, method=False)
    assert isinstance(node, ast.ClassDef)
    init = next(
        (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is not None:
        return _params(init, method=True)
    bases = []  # the simple bases found in the wheel: (their accepted keywords, dataclass?)
    for base in node.bases:
        if isinstance(base, ast.Name) and depth < 12:
            found = _definition(files, module, base.id)
            if found is not None and isinstance(found[2], ast.ClassDef):
                bases.append((_signature(files, *found, depth + 1), _is_dataclass(found[2])))
    if _is_dataclass(node):  # generated __init__: inherited dataclass fields, then its own
        inherited: set[str] = set()
        for accepted, is_dc in bases:
            if is_dc and accepted is not None:
                inherited |= accepted
        return inherited | set(_fields(node))
    return bases[0][0] if bases else set()  # the first base's __init__, else object's


def accepted_keywords(files: dict[str, str], qualified: str) -> set[str] | None:
    """The keywords ``module.Name`` accepts in a wheel's sources (``None``: any keyword).

    Raises:
        LookupError: when the name's definition is not found in the wheel.
    """
    module, _, name = qualified.rpartition(".")
    found = _definition(files, module, name)
    if found is None or not isinstance(found[2], ast.ClassDef | ast.FunctionDef):
        raise LookupError(f"torchao_api: no def or class for {qualified} in the wheel")
    return _signature(files, *found)


def keywords_in_wheel(wheel: Path, keywords: dict[str, list[str]]) -> dict[str, list[str]]:
    """Which of ``keywords`` (``module.Name`` -> keywords passed) a wheel's signatures accept.

    Returns:
        ``{"present": [...], "missing": [...]}``, entries written ``module.Name(keyword=)``,
        sorted; a keyword of a name the wheel does not define is missing.

    Raises:
        ValueError: if the file is not a wheel.
    """
    if not zipfile.is_zipfile(wheel):
        raise ValueError(f"torchao_api: {wheel} is not a wheel")
    with zipfile.ZipFile(wheel) as zf:
        files = {
            n: zf.read(n).decode("utf-8")
            for n in zf.namelist()
            if n.startswith("torchao/")
            if n.endswith(".py")
        }
    present, missing = [], []
    for qualified, kws in keywords.items():
        if not kws:
            continue
        try:
            accepted = accepted_keywords(files, qualified)
        except LookupError:
            accepted = set()
        for kw in kws:
            entry = f"{qualified}({kw}=)"
            (present if accepted is None or kw in accepted else missing).append(entry)
    return {"present": sorted(present), "missing": sorted(missing)}


def wheel_version(wheel: Path) -> str:
    """The version in a wheel's file name (``torchao-0.18.0-cp310-...whl`` -> ``0.18.0``)."""
    match = re.match(r"torchao-([0-9][^-]*)-", wheel.name)
    if match is None:
        raise ValueError(f"torchao_api: {wheel.name} is not a torchao wheel name")
    return match.group(1)


def record(wheels: list[Path], keywords: dict[str, list[str]] | None = None) -> dict:
    """The record written to ``torchao_api.json``: the keywords chapter 07 passes, then per
    version the names and keywords present and missing.

    Args:
        wheels: torchao wheels.
        keywords: ``module.Name`` -> keywords passed (default: :func:`notebook_keywords` of
            chapter 07).
    """
    keywords = notebook_keywords() if keywords is None else keywords
    wanted = sorted(f"{m}.{n}" for m, names in CHAPTER_07_IMPORTS.items() for n in names)
    versions = {}
    for wheel in sorted(wheels, key=lambda w: [int(x) for x in wheel_version(w).split(".")]):
        present = names_in_wheel(wheel)
        versions[wheel_version(wheel)] = {
            "present": present,
            "missing": [n for n in wanted if n not in present],
            "keywords": keywords_in_wheel(wheel, keywords),
        }
    return {
        "what": "names chapter 07 imports and keywords it passes them, found in each torchao "
        "wheel's Python sources",
        "made_by": "scripts/compat/torchao_api.py",
        "keywords": keywords,
        "versions": versions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", help="torchao releases to download")
    parser.add_argument("--wheels", type=Path, help="a folder of torchao wheels already here")
    args = parser.parse_args(argv)
    folder = args.wheels or Path(tempfile.mkdtemp(prefix="torchao-wheels-"))
    for version in args.versions:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        subprocess.run([*cmd, f"torchao=={version}", "-d", str(folder)], check=True)
    wheels = sorted(folder.glob("torchao-*.whl"))
    if not wheels:
        parser.error("no torchao wheels: name versions or --wheels DIR")
    RECORD.write_text(json.dumps(record(wheels), indent=1) + "\n", encoding="utf-8")
    print(f"torchao_api: wrote {RECORD.name} for {len(wheels)} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
