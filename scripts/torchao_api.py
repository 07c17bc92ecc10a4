"""Record which of the names chapter 07 imports each torchao release has (``torchao_api.json``).

    python scripts/torchao_api.py 0.13.0 0.14.1 ... 0.18.0   download each wheel, write the record
    python scripts/torchao_api.py --wheels DIR                read the wheels already in DIR

Each wheel is fetched with ``pip download --no-deps torchao==X`` (nothing is installed or
imported) and its Python sources are read: a name counts as present when the module's source
binds it (``import``/``from ... import``, ``def``, ``class``, assignment) or, for a submodule,
when its file exists. ``tests/scripts/test_torchao_api.py`` checks the Colab cell's torchao table
(``scripts/colab_cell.py``) and the ``book`` extra's floor against this record, and that
:data:`CHAPTER_07_IMPORTS` is what chapter 07 imports.
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

from find_notebooks import ROOT

RECORD = ROOT / "scripts" / "torchao_api.json"

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


def wheel_version(wheel: Path) -> str:
    """The version in a wheel's file name (``torchao-0.18.0-cp310-...whl`` -> ``0.18.0``)."""
    match = re.match(r"torchao-([0-9][^-]*)-", wheel.name)
    if match is None:
        raise ValueError(f"torchao_api: {wheel.name} is not a torchao wheel name")
    return match.group(1)


def record(wheels: list[Path]) -> dict:
    """The record written to ``torchao_api.json``: version -> names present and missing."""
    wanted = sorted(f"{m}.{n}" for m, names in CHAPTER_07_IMPORTS.items() for n in names)
    versions = {}
    for wheel in sorted(wheels, key=lambda w: [int(x) for x in wheel_version(w).split(".")]):
        present = names_in_wheel(wheel)
        versions[wheel_version(wheel)] = {
            "present": present,
            "missing": [n for n in wanted if n not in present],
        }
    return {
        "what": "names chapter 07 imports, found in each torchao wheel's Python sources",
        "made_by": "scripts/torchao_api.py",
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
