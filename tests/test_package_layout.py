"""The package's layout: one home per public name, faces hand names on, no import loop, and
every module reached from a chapter (a module no chapter imports belongs in ``scripts/``).
The workshop's too: no import loop in ``scripts/``, every tool in a family folder with a face.

Read from the source by ``scripts/audits/import_graph.py`` (nothing imported), so a loop hidden in a
function body counts too. The checks themselves are tested in
``tests/scripts/test_import_graph.py``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from scripts.audits import import_graph

#: The subpackages, from the folders: every folder of the package with an ``__init__.py``.
FACES = tuple(sorted(p.parent.name for p in Path(import_graph.DEFAULT_DIR).glob("*/__init__.py")))


def test_faces_are_found_from_the_folders():
    assert "bench" in FACES and "storage" in FACES
    assert all((Path(import_graph.DEFAULT_DIR) / f / "__init__.py").is_file() for f in FACES)


def test_every_module_is_reached_from_a_chapter(repo_root):
    """CONTRIBUTING: a module no chapter imports, directly or through another, is scripts/'s."""
    from scripts.book.find_notebooks import chapter_notebooks

    notebooks = chapter_notebooks(repo_root)
    assert len(notebooks) >= 10
    assert import_graph.unreached(notebooks=notebooks) == []


def test_no_import_loop():
    assert import_graph.cycles(import_graph.graph()) == []


def test_no_module_re_exports_a_siblings_names_outside_a_face():
    assert import_graph.re_exports() == []


def test_every_public_name_has_one_home():
    homes: dict[str, list[str]] = {}
    for name, path in import_graph.module_files().items():
        if path.name == "__init__.py":
            continue
        for public in import_graph.public_names(path):
            homes.setdefault(public, []).append(name)
    faces = {f"tricks_helpers.{f}" for f in FACES}
    for face in faces:
        module = importlib.import_module(face)
        for public in module.__all__:
            home = getattr(module, public).__module__ if callable(getattr(module, public)) else None
            if home is not None:
                assert home.startswith(face + "."), (face, public, home)
                assert home in homes.get(public, []), (face, public, home)


@pytest.mark.parametrize("face", FACES)
def test_faces_hand_on_every_name_of_all(face):
    module = importlib.import_module(f"tricks_helpers.{face}")
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []


def test_floors_put_checks_on_the_ground():
    levels = import_graph.floors(import_graph.graph())
    assert levels["tricks_helpers._checks"] == 0
    assert levels["tricks_helpers.bench"] > levels["tricks_helpers.bench.verdicts"]
    assert Path(import_graph.DEFAULT_DIR).name == "tricks_helpers"


# The workshop (scripts/): the same graph, read the same way, for its family packages.


def test_scripts_have_no_import_loop():
    edges = import_graph.graph(import_graph.SCRIPTS_DIR)
    assert "scripts.results.schema" in edges and "scripts.book.machine_records" in edges
    assert import_graph.cycles(edges) == []


def test_scripts_are_in_family_folders_each_with_a_face():
    assert import_graph.flat_modules() == []
    assert import_graph.faceless_folders() == []


def test_the_results_schema_imports_no_reader_of_results_files():
    """The schema is the floor a results file is checked against: its readers import it. It
    stands on its validator's plumbing only, which imports nothing of the workshop."""
    edges = import_graph.graph(import_graph.SCRIPTS_DIR)
    assert set(edges["scripts.results.schema"]) == {"scripts.results.validator"}
    assert edges["scripts.results.validator"] == {}
    assert edges["scripts.results.json_file"] == {}
    assert "scripts.results.schema" in edges["scripts.book.machine_records"]


def test_the_package_map_names_every_module():
    """tricks_helpers/__init__.py's docstring names each top-level module and subpackage."""
    import tricks_helpers

    top = {
        p.stem if p.suffix == ".py" else p.name
        for p in Path(import_graph.DEFAULT_DIR).iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    doc = tricks_helpers.__doc__
    missing = sorted(m for m in top if f"tricks_helpers.{m}`" not in doc)
    assert missing == []
