"""scripts/audits/import_graph.py on scratch packages: loops, re-exports, lazy imports, reach.

``tests/test_package_layout.py`` applies the same checks to the real package.
"""

from __future__ import annotations

import json

import pytest

from scripts.audits import import_graph


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


def chapter(path, *sources):
    cells = [{"cell_type": "markdown", "source": "# T", "metadata": {}}]
    cells += [
        {"cell_type": "code", "source": s, "metadata": {}, "outputs": [], "execution_count": None}
        for s in sources
    ]
    path.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    return path


def test_chapter_imports_reads_every_import_form(tmp_path):
    nb = chapter(
        tmp_path / "01_a.ipynb",
        "%matplotlib inline\nfrom tricks_helpers import (\n    bench,\n    env,\n)",
        "!pip list\nimport tricks_helpers.counting\nfrom tricks_helpers.memory import sizes",
        "import torch",
    )
    assert import_graph.chapter_imports(nb) == {
        "tricks_helpers",
        "tricks_helpers.bench",
        "tricks_helpers.env",
        "tricks_helpers.counting",
        "tricks_helpers.memory",
        "tricks_helpers.memory.sizes",
    }
    bad = chapter(tmp_path / "02_b.ipynb", "def (")
    with pytest.raises(ValueError, match="02_b.ipynb: cell 1 is not Python"):
        import_graph.chapter_imports(bad)


def test_unreached_names_the_modules_no_chapter_imports(tmp_path):
    pkg = tmp_path / "tricks_helpers"
    (pkg / "topic").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_checks.py").write_text("")
    (pkg / "used.py").write_text("from tricks_helpers import _checks\n")
    (pkg / "workshop.py").write_text("from tricks_helpers import used\n")  # imports, unimported
    (pkg / "topic" / "__init__.py").write_text(
        "import importlib\n\ndef __getattr__(name):\n"
        "    return importlib.import_module(f'{__name__}.{\"lazy\"}')\n"
    )
    (pkg / "topic" / "lazy.py").write_text("from tricks_helpers.topic import deep\n")
    (pkg / "topic" / "deep.py").write_text("")
    (pkg / "topic" / "dead.py").write_text("")
    nb = chapter(tmp_path / "01_a.ipynb", "from tricks_helpers import used, topic")
    edges = import_graph.graph(pkg)
    assert set(edges["tricks_helpers.topic"]) == {"tricks_helpers.topic.lazy"}, "lazy arrow"
    assert import_graph.unreached(pkg, [nb]) == [
        "tricks_helpers.topic.dead",
        "tricks_helpers.workshop",
    ]
    assert import_graph.unreached(pkg, []) == sorted(edges), "no chapter reaches nothing"
    assert "tricks_helpers" in import_graph.reached(edges, {"tricks_helpers.topic.deep"})


def test_a_module_launched_by_name_is_reached(tmp_path):
    pkg = tmp_path / "tricks_helpers"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""tricks_helpers"""\n')
    (pkg / "launcher.py").write_text("CMD = ['-m', 'tricks_helpers.worker']\n")
    (pkg / "worker.py").write_text("")
    (pkg / "script.py").write_text("")
    (pkg / "other.py").write_text("")
    nb = chapter(
        tmp_path / "08_a.ipynb",
        "from tricks_helpers import launcher\nrun('tricks_helpers.script', module=True)",
    )
    assert import_graph.graph(pkg)["tricks_helpers.launcher"] == {"tricks_helpers.worker": set()}
    assert import_graph.graph(pkg)["tricks_helpers"] == {}, "its own name is no arrow"
    assert "tricks_helpers.script" in import_graph.chapter_imports(nb)
    assert import_graph.unreached(pkg, [nb]) == ["tricks_helpers.other"]
