"""The package's layout: one home per public name, faces hand names on, no import loop.

Read from the source by ``scripts/import_graph.py`` (nothing imported), so a loop hidden in a
function body counts too.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import import_graph

FACES = ("bench", "seeding", "memory", "ddp", "storage")


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


def test_the_checks_find_a_loop_and_a_re_export(tmp_path):
    pkg = tmp_path / "tricks_helpers"
    (pkg / "topic").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tricks_helpers.b import thing\n__all__ = ['thing']\n")
    (pkg / "b.py").write_text("def thing():\n    from tricks_helpers import a\n")
    (pkg / "topic" / "__init__.py").write_text(
        "from tricks_helpers.topic.part import x\n__all__ = ['x']\n"
    )
    (pkg / "topic" / "part.py").write_text("x = 1\n__all__ = ['x']\n")
    edges = import_graph.graph(pkg)
    assert import_graph.cycles(edges) == [
        ["tricks_helpers.a", "tricks_helpers.b", "tricks_helpers.a"]
    ]
    assert import_graph.re_exports(pkg) == ["tricks_helpers.a.thing (from tricks_helpers.b)"]
    with pytest.raises(ValueError, match="import loop"):
        import_graph.floors(edges)


def test_floors_put_checks_on_the_ground():
    levels = import_graph.floors(import_graph.graph())
    assert levels["tricks_helpers._checks"] == 0
    assert levels["tricks_helpers.bench"] > levels["tricks_helpers.bench.verdicts"]
    assert Path(import_graph.DEFAULT_DIR).name == "tricks_helpers"
