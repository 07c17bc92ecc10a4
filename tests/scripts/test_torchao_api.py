"""The Colab cell's torchao table, the book extra's floor and chapter 07, against the wheels.

``scripts/compat/torchao_api.json`` records which names chapter 07 imports, and which keywords it
passes them, each torchao wheel has (made by ``scripts/compat/torchao_api.py`` from the wheels pip
downloads; nothing is imported).
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

from scripts.compat import torchao_api
from scripts.release import colab_cell
from tricks_helpers import quantization as qz

INT4 = "torchao.prototype.quantization.int4.PrototypeInt4WeightOnlyConfig"


@pytest.fixture(scope="module")
def record(repo_root):
    return json.loads(
        (repo_root / "scripts" / "compat" / "torchao_api.json").read_text(encoding="utf-8")
    )


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


def test_the_recorded_keywords_are_what_chapter_07_passes(record):
    """Adding (or renaming) a keyword in the chapter without re-recording fails here."""
    assert record["keywords"] == torchao_api.notebook_keywords()
    for version, entry in record["versions"].items():
        kws = entry["keywords"]
        wanted = {f"{n}({k}=)" for n, ks in record["keywords"].items() for k in ks}
        assert set(kws["present"]) | set(kws["missing"]) == wanted, version


def short_to_qualified():
    return {n: f"{m}.{n}" for m, names in torchao_api.CHAPTER_07_IMPORTS.items() for n in names}


def runs_by_record(entry, names, keywords):
    """A section runs on a wheel only if every name it uses and every keyword passed to
    them is present there."""
    qualified = [short_to_qualified()[n] for n in names]
    passed = {f"{q}({k}=)" for q in qualified for k in keywords.get(q, [])}
    return set(qualified) <= set(entry["present"]) and passed <= set(entry["keywords"]["present"])


def test_every_torchao_name_of_chapter_07_belongs_to_one_section():
    listed = [n for _, names in qz.TORCHAO_NEEDED.values() for n in names]
    assert sorted(listed) == sorted(short_to_qualified()) and len(set(listed)) == len(listed)


def test_torchao_needed_says_a_section_runs_exactly_where_the_record_does(record):
    """For every recorded wheel and section: quantization.torchao_supports agrees with the
    names and keywords found in the wheel, and each release in TORCHAO_NEEDED is the first
    recorded one that runs the section."""
    for version, entry in record["versions"].items():
        supports = qz.torchao_supports(version)
        for section, (_, names) in qz.TORCHAO_NEEDED.items():
            expected = runs_by_record(entry, names, record["keywords"])
            assert supports[section] == expected, (version, section)
    for section, (need, names) in qz.TORCHAO_NEEDED.items():
        running = [
            v for v, e in record["versions"].items() if runs_by_record(e, names, record["keywords"])
        ]
        assert Version(min(running, key=Version)).release[:2] == Version(need).release, section


@pytest.mark.parametrize("torch_minor", list(colab_cell.TORCHAO_FOR_TORCH))
def test_every_row_installs_a_torchao_07_runs_skipping_only_what_it_lacks(torch_minor, record):
    """Every release a row admits is recorded; 07 runs on each (qz.require_torchao does not
    refuse it), and skips exactly the sections whose names or keywords that release lacks."""
    spec = colab_cell.TORCHAO_FOR_TORCH[torch_minor].removeprefix("torchao")
    versions = allowed(spec, record)
    assert versions, f"torch {torch_minor}: no recorded torchao in {spec}"
    for version in versions:
        runs = qz.require_torchao(version)  # never refuses a release of the table
        entry = record["versions"][version]
        missing = entry["missing"] + entry["keywords"]["missing"]
        skipped = [s for s, ok in runs.items() if not ok]
        assert bool(missing) == bool(skipped), version
        if Version(version) >= Version("0.14"):
            assert skipped in ([], ["int4 weight-only"]), version


def test_rows_from_torch_2_11_install_a_complete_torchao(record):
    for minor, spec in colab_cell.TORCHAO_FOR_TORCH.items():
        if tuple(int(x) for x in minor.split(".")) >= (2, 11):
            for version in allowed(spec.removeprefix("torchao"), record):
                entry = record["versions"][version]
                assert not entry["missing"] and not entry["keywords"]["missing"], (minor, version)
                assert all(qz.torchao_supports(version).values()), (minor, version)


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


def fake_wheel(path, files):
    with zipfile.ZipFile(path, "w") as zf:
        for name, source in files.items():
            zf.writestr(name, source)
    return path


CONFIG_BASE = "class AOBaseConfig:\n    pass\n"


def test_a_planted_rename_of_a_keyword_fails_the_check(tmp_path):
    """torchao 0.13 spelled int4_packing_format as packing_format: a wheel like that must
    report the chapter's keyword missing, and keep the others present."""
    quant_api = (
        "from dataclasses import dataclass\n"
        "from torchao.core.config import AOBaseConfig\n\n"
        "@dataclass\n"
        "class Int4WeightOnlyConfig(AOBaseConfig):\n"
        "    group_size: int = 128\n"
        "    set_inductor_config: bool = True\n"
        "    packing_format: str = 'plain'\n"
    )
    wheel = fake_wheel(
        tmp_path / "torchao-0.13.0-py3-none-any.whl",
        {
            "torchao/core/config.py": CONFIG_BASE,
            "torchao/quantization/__init__.py": "from .quant_api import Int4WeightOnlyConfig\n",
            "torchao/quantization/quant_api.py": quant_api,
        },
    )
    passed = {"torchao.quantization.Int4WeightOnlyConfig": ["group_size", "int4_packing_format"]}
    found = torchao_api.keywords_in_wheel(wheel, passed)
    assert found == {
        "present": ["torchao.quantization.Int4WeightOnlyConfig(group_size=)"],
        "missing": ["torchao.quantization.Int4WeightOnlyConfig(int4_packing_format=)"],
    }
    renamed_back = fake_wheel(
        tmp_path / "torchao-0.14.0-py3-none-any.whl",
        {
            "torchao/core/config.py": CONFIG_BASE,
            "torchao/quantization/__init__.py": "from .quant_api import Int4WeightOnlyConfig\n",
            "torchao/quantization/quant_api.py": quant_api.replace(
                "packing_format", "int4_packing_format"
            ),
        },
    )
    assert torchao_api.keywords_in_wheel(renamed_back, passed)["missing"] == []


def test_signatures_follow_imports_bases_init_and_kwargs(tmp_path):
    files = {
        "torchao/__init__.py": "",
        "torchao/qat/__init__.py": (
            "from .api import QATConfig, Child, Plain\nfrom torchao.fq import Fake as FakeConfig\n"
            "Alias = Child\n"
        ),
        "torchao/qat/api.py": (
            "from dataclasses import dataclass\n"
            "@dataclass\nclass Base:\n    step: str = 'prepare'\n"
            "@dataclass\nclass Child(Base):\n    extra: int = 0\n"
            "class Plain(Base):\n    pass\n"
            "@dataclass\nclass QATConfig:\n    base_config: object = None\n"
            "    def __init__(self, base_config=None, *, weight_config=None, step='prepare'):\n"
            "        pass\n"
        ),
        "torchao/fq.py": "class Fake:\n    def __init__(self, dtype, **kwargs):\n        pass\n"
        "def quantize_(model, config, filter_fn=None):\n    pass\n",
    }
    wheel = fake_wheel(tmp_path / "torchao-9.9.0-py3-none-any.whl", files)
    passed = {
        "torchao.qat.QATConfig": ["step", "weight_config", "activation_config"],
        "torchao.qat.Alias": ["step", "extra"],
        "torchao.qat.Plain": ["step"],
        "torchao.qat.FakeConfig": ["anything"],
        "torchao.fq.quantize_": ["filter_fn", "device"],
        "torchao.nowhere.Thing": ["x"],
        "torchao.qat.Positional": [],
    }
    found = torchao_api.keywords_in_wheel(wheel, passed)
    assert found["missing"] == [
        "torchao.fq.quantize_(device=)",
        "torchao.nowhere.Thing(x=)",
        "torchao.qat.QATConfig(activation_config=)",  # __init__ wins over the fields
    ]
    assert "torchao.qat.FakeConfig(anything=)" in found["present"]  # **kwargs takes any
    assert "torchao.qat.Alias(extra=)" in found["present"]  # Alias = Child, fields inherited
    assert "torchao.qat.Plain(step=)" in found["present"]  # no __init__: the base's
    with pytest.raises(ValueError, match="is not a wheel"):
        torchao_api.keywords_in_wheel(tmp_path / "torchao-0.13.0-py3-none-any.whl", passed)


def test_notebook_keywords_reads_calls_and_refuses_unpacked_keywords(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "%matplotlib inline\n"
            "from torchao.quantization import quantize_, Int8WeightOnlyConfig as W"
        ),
        nbformat.v4.new_code_cell("quantize_(m, W(set_inductor_config=False), filter_fn=f)\nW()"),
    ]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert torchao_api.notebook_keywords(path) == {
        "torchao.quantization.Int8WeightOnlyConfig": ["set_inductor_config"],
        "torchao.quantization.quantize_": ["filter_fn"],
    }
    nb.cells.append(nbformat.v4.new_code_cell("kw = dict(set_inductor_config=False)\nW(**kw)"))
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match=r"a call of W .*unpacks \*\*keywords"):
        torchao_api.notebook_keywords(path)


def test_chapter_07_prose_names_the_releases_of_torchao_needed(repo_root):
    """The title cell's "Which torchao" paragraph says what TORCHAO_NEEDED says: every
    release there, written as ``torchao >= X``, and no other."""
    nb = nbformat.read(repo_root / "book" / "07_quantization.ipynb", as_version=4)
    (para,) = [
        line
        for c in nb.cells
        if c.cell_type == "markdown"
        for line in c.source.splitlines()
        if line.startswith("**Which torchao.**")
    ]
    said = set(re.findall(r"torchao >= [0-9.]+", para))
    assert said == {qz.torchao_needs(s) for s in qz.TORCHAO_NEEDED}
    assert "[skipped]" in para and "quantization.require_torchao" in para
