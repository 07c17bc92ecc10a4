"""scripts/compat/run.py: the runner's compat mode, one line per chapter, records kept."""

from __future__ import annotations

from types import SimpleNamespace

import nbformat
import pytest

from scripts.book import run_notebooks
from scripts.compat import records as compat_records
from scripts.compat import run as compat_run

VERSIONS = {"torch": "2.10.0+cu128", "torchao": "0.16.0", "python": "3.11.7"}


def stub(fail=(), calls=None):
    """A runner that runs nothing: the notebook as read; chapters in ``fail`` fail at cell 2."""

    def run(path, write, timeout):
        assert write is False, "compat never writes a notebook"
        if calls is not None:
            calls.append(path.stem)
        nb = nbformat.read(path, as_version=4)
        error = ""
        if path.stem in fail:
            nb.cells[2].outputs = [
                nbformat.v4.new_output("error", ename="ImportError", evalue="no X", traceback=[])
            ]
            error = "code cell 2: ImportError: no X"
        return SimpleNamespace(nb=nb, seconds=2.0, error=error)

    return run


def book(make_notebook, tmp_path, names=("01_a", "07_q")):
    return [
        make_notebook(f"book/{n}.ipynb", ["# T", {"source": f"print('{n}')"}, {"source": "y"}])
        for n in names
    ]


def run(paths, root, *, partial=False, versions=VERSIONS, runner=None, commit="c1"):
    return compat_run.run_compat(
        paths,
        "2.10.0",
        root=root,
        runner=runner or stub(),
        partial=partial,
        machine="amd-epyc-avx2-only-2t",
        versions=versions,
        commit=commit,
    )


def test_one_line_per_chapter_and_a_record(make_notebook, tmp_path, capsys):
    paths = book(make_notebook, tmp_path)
    entries, path = run(paths, tmp_path, runner=stub(fail={"07_q"}))
    assert path == tmp_path / "results" / "compat" / "torch-2.10.0.json"
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "compat: torch 2.10.0+cu128, torchao 0.16.0"
    # each chapter's outputs compared with the stored ones as nbval does (issue 41)
    assert out[1] == "01_a  ran; outputs: 2 cells compared, 0 differ  (2.0 s)"
    assert out[2] == (
        "07_q  failed at code cell 2: ImportError: no X; outputs: 2 cells compared, 1 differ "
        "(code cells 2)  (2.0 s)"
    )
    assert out[-1].startswith("1 of 2 chapters ran; record: ")
    data = compat_records.read_record(path)
    assert data["torchao_requirement"] == "torchao>=0.16,<0.17"  # the Colab cell's row
    assert data["chapters"]["07_q"]["failed_cell"] == 2
    assert entries["01_a"]["status"] == "ran"
    assert data["chapters"]["01_a"]["outputs"] == {"cells": 2, "differing": []}
    assert data["chapters"]["07_q"]["outputs"] == {"cells": 2, "differing": [2]}


def test_another_python_gets_its_own_record(make_notebook, tmp_path):
    paths = book(make_notebook, tmp_path)
    _, book_python = run(paths, tmp_path)
    _, colab = run(paths, tmp_path, versions={**VERSIONS, "python": "3.12.1"})
    assert (book_python.name, colab.name) == ("torch-2.10.0.json", "torch-2.10.0-py3.12.json")
    assert [r["python"] for r in compat_records.read_all(book_python.parent)] == [
        "3.11.7",
        "3.12.1",
    ]


def test_a_run_of_some_chapters_keeps_the_others(make_notebook, tmp_path):
    paths = book(make_notebook, tmp_path)
    run(paths, tmp_path, runner=stub(fail={"07_q"}), commit="old")
    _, path = run(paths[1:], tmp_path, partial=True, commit="fixed")
    chapters = compat_records.read_record(path)["chapters"]
    assert (chapters["07_q"]["status"], chapters["07_q"]["commit"]) == ("ran", "fixed")
    assert chapters["01_a"]["commit"] == "old"
    _, path = run(paths[1:], tmp_path, commit="whole")  # every chapter named: a new record
    assert list(compat_records.read_record(path)["chapters"]) == ["07_q"]


def test_a_partial_run_under_other_versions_is_refused_before_running(make_notebook, tmp_path):
    paths = book(make_notebook, tmp_path)
    run(paths, tmp_path)
    calls = []
    other = {**VERSIONS, "python": "3.11.9"}  # the same record's file, another Python
    with pytest.raises(ValueError, match="python '3.11.7' -> '3.11.9'"):
        run(paths[1:], tmp_path, partial=True, versions=other, runner=stub(calls=calls))
    assert calls == []


@pytest.mark.parametrize(
    "versions, match",
    [
        ({**VERSIONS, "torch": "2.13.0+cpu"}, "has torch 2.13.0"),
        ({**VERSIONS, "torchao": "0.18.0"}, "torchao 0.18.0, but torch 2.10.0's row"),
        ({**VERSIONS, "torchao": "none"}, "torchao none"),
    ],
)
def test_refuses_an_environment_the_record_would_misname(make_notebook, tmp_path, versions, match):
    with pytest.raises(ValueError, match=match):
        run(book(make_notebook, tmp_path), tmp_path, versions=versions)
    assert not (tmp_path / "results" / "compat").exists()


def test_a_crashing_runner_fails_its_chapter_only(make_notebook, tmp_path):
    def crash(path, write, timeout):
        if path.stem == "01_a":
            raise RuntimeError("boom\nmore")
        return stub()(path, write, timeout)

    entries, _ = run(book(make_notebook, tmp_path), tmp_path, runner=crash)
    crashed = entries["01_a"]
    assert (crashed["error"], crashed["failed_cell"]) == ("RuntimeError: boom", None)
    assert entries["07_q"]["status"] == "ran"


def test_main_exits_1_with_a_clear_error_on_the_wrong_environment(tmp_book, capsys):
    root = tmp_book({"01_a": ["# 01 · A", {"source": "x = 1"}]})
    assert run_notebooks.main(["--compat", "1.0.0"], root=root) == 1
    assert "not 1.0.0" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("outputs", "strict", "code"),
    [
        ({"cells": 2, "differing": []}, True, 0),
        ({"cells": 2, "differing": [2]}, False, 0),  # make compat: a release's wording may differ
        ({"cells": 2, "differing": [2]}, True, 1),  # CI's Python 3.12 job: it must not
        (None, True, 1),  # not compared (cell counts differ): not known to be equal
    ],
)
def test_strict_exits_1_when_outputs_differ(tmp_book, monkeypatch, outputs, strict, code):
    root = tmp_book({"01_a": ["# 01 · A", {"source": "x = 1"}]})
    entry = {"status": "ran"} | ({"outputs": outputs} if outputs else {})
    monkeypatch.setattr(compat_run, "run_compat", lambda *a, **k: ({"01_a": entry}, None))
    argv = ["--compat", "2.10.0"] + (["--strict"] if strict else [])
    assert run_notebooks.main(argv, root=root) == code
