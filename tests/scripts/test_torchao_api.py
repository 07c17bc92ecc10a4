"""The Colab cell's torchao table, the book extra's floor and chapter 07, against the wheels.

``scripts/torchao_api.json`` records which names chapter 07 imports each torchao wheel has
(made by ``scripts/torchao_api.py`` from the wheels pip downloads; nothing is imported).
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
import zipfile

import nbformat
import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import colab_cell
import torchao_api
from tricks_helpers import quantization as qz

INT4 = "torchao.prototype.quantization.int4.PrototypeInt4WeightOnlyConfig"


@pytest.fixture(scope="module")
def record(repo_root):
    return json.loads((repo_root / "scripts" / "torchao_api.json").read_text(encoding="utf-8"))


def chapter_07_imports(repo_root):
    nb = nbformat.read(repo_root / "book" / "07_quantization.ipynb", as_version=4)
    found = {}
    for cell in nb.cells:
        if cell.cell_type != "code" or "torchao" not in cell.source:
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torchao"):
                found.setdefault(node.module, []).extend(a.name for a in node.names)
    return {m: sorted(set(names)) for m, names in found.items()}  # the recipe imports again


def test_the_recorded_names_are_what_chapter_07_imports(repo_root):
    expected = {m: sorted(n) for m, n in torchao_api.CHAPTER_07_IMPORTS.items()}
    assert chapter_07_imports(repo_root) == expected


def test_record_covers_the_releases_the_registry_serves(record):
    wanted = {f"{m}.{n}" for m, names in torchao_api.CHAPTER_07_IMPORTS.items() for n in names}
    assert {"0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0"} <= set(record["versions"])
    for version, entry in record["versions"].items():
        assert set(entry["present"]) | set(entry["missing"]) == wanted, version


def allowed(spec, record):
    return [v for v in record["versions"] if Version(v) in SpecifierSet(spec)]


@pytest.mark.parametrize("torch_minor", list(colab_cell.TORCHAO_FOR_TORCH))
def test_every_row_installs_a_torchao_07_runs_or_explains_itself_with(torch_minor, record):
    """Every release a row admits is recorded; each has all 07 imports, or 07 says it needs
    a newer one (qz.require_torchao names the release) before any import fails."""
    spec = colab_cell.TORCHAO_FOR_TORCH[torch_minor].removeprefix("torchao")
    versions = allowed(spec, record)
    assert versions, f"torch {torch_minor}: no recorded torchao in {spec}"
    for version in versions:
        missing = record["versions"][version]["missing"]
        if not missing:
            qz.require_torchao(version)  # runs whole: no complaint
            continue
        assert missing == [INT4], f"torchao {version} lacks {missing}"
        with pytest.raises(RuntimeError, match=r"int4 weight-only rows need torchao >= 0\.18"):
            qz.require_torchao(version)


def test_require_torchao_matches_the_record(record):
    """The first release with every name is the one TORCHAO_NEEDED names for int4."""
    complete = [v for v, e in record["versions"].items() if not e["missing"]]
    first = min(complete, key=Version)
    need = {name: release for _, name, release in qz.TORCHAO_NEEDED}
    assert Version(first).release[:2] == Version(need["PrototypeInt4WeightOnlyConfig"]).release
    incomplete = [v for v, e in record["versions"].items() if e["missing"]]
    assert max(Version(v) for v in incomplete) < Version(first)


def test_rows_from_torch_2_11_install_a_complete_torchao(record):
    for minor, spec in colab_cell.TORCHAO_FOR_TORCH.items():
        if tuple(int(x) for x in minor.split(".")) >= (2, 11):
            for version in allowed(spec.removeprefix("torchao"), record):
                assert not record["versions"][version]["missing"], (minor, version)


def test_book_extra_floor_is_the_oldest_row_and_has_the_other_names(repo_root, record):
    with open(repo_root / "pyproject.toml", "rb") as f:
        book = tomllib.load(f)["project"]["optional-dependencies"]["book"]
    (req,) = [r for r in book if r.startswith("torchao")]
    floor = re.fullmatch(r"torchao>=([0-9.]+)", req).group(1)
    lowest = min(
        (Version(v) for s in colab_cell.TORCHAO_FOR_TORCH.values() for v in allowed(s[7:], record)),
    )
    assert Version(floor) == lowest
    assert record["versions"][str(lowest)]["missing"] == [INT4]


def test_names_in_wheel_reads_bindings_and_submodules(tmp_path):
    wheel = tmp_path / "torchao-9.9.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("torchao/quantization/__init__.py", "from .api import quantize_\nX = 1\n")
        zf.writestr("torchao/quantization/pt2e/quantizer/x86_inductor_quantizer.py", "")
        zf.writestr("torchao/quantization/qat/__init__.py", "class QATConfig: ...\n")
    imports = {
        "torchao.quantization": ["quantize_", "Int8WeightOnlyConfig"],
        "torchao.quantization.pt2e.quantizer": ["x86_inductor_quantizer"],
        "torchao.quantization.qat": ["QATConfig"],
        "torchao.nowhere": ["Thing"],
    }
    assert torchao_api.names_in_wheel(wheel, imports) == [
        "torchao.quantization.pt2e.quantizer.x86_inductor_quantizer",
        "torchao.quantization.qat.QATConfig",
        "torchao.quantization.quantize_",
    ]
    assert torchao_api.wheel_version(wheel) == "9.9.0"
    not_a_wheel = tmp_path / "torchao-1.0-x.whl"
    not_a_wheel.write_text("no")
    with pytest.raises(ValueError, match="is not a wheel"):
        torchao_api.names_in_wheel(not_a_wheel)
