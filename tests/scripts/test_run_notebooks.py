"""Tests of scripts/run_notebooks.py: executing notebooks in place or only trying them."""

from __future__ import annotations

import nbformat
import pytest

import machine_records
import run_notebooks  # scripts/ is on pytest's pythonpath (pyproject.toml)


def test_outcome_lines_and_summary():
    ok = run_notebooks.Outcome("01_a.ipynb", 1.25)
    bad = run_notebooks.Outcome("02_bb.ipynb", 3.0, "code cell 4: ValueError: x")
    text = run_notebooks.summary([ok, bad])
    lines = text.splitlines()
    assert lines[0].startswith("summary: torch ")
    assert lines[1] == "01_a.ipynb   ok         1.2 s"
    assert lines[2] == "02_bb.ipynb  FAILED     3.0 s  code cell 4: ValueError: x"
    assert lines[3] == "1 of 2 notebooks ran without error; failed: 02_bb.ipynb"


@pytest.mark.slow
def test_no_write_keep_going_tries_every_notebook_and_writes_nothing(tmp_book, capsys):
    root = tmp_book(
        {
            "01_ok": ["# OK", {"source": "print(1 + 1)", "outputs": []}],
            "02_bad": ["# Bad", {"source": "raise ValueError('nope')", "outputs": []}],
        }
    )
    paths = [str(root / "book" / n) for n in ("02_bad.ipynb", "01_ok.ipynb")]
    before = [open(p, "rb").read() for p in paths]
    assert run_notebooks.main(["--no-write", "--keep-going", *paths]) == 1
    out = capsys.readouterr().out
    assert "02_bad.ipynb  FAILED" in out and "code cell 1: ValueError: nope" in out
    assert "01_ok.ipynb   ok" in out
    assert out.rstrip().endswith("1 of 2 notebooks ran without error; failed: 02_bad.ipynb")
    assert [open(p, "rb").read() for p in paths] == before


@pytest.mark.slow
def test_in_place_writes_outputs_and_stops_at_a_failure(tmp_book, capsys):
    root = tmp_book(
        {
            "01_bad": ["# Bad", {"source": "1/0", "outputs": []}],
            "02_ok": ["# OK", {"source": "print('hi')", "outputs": []}],
        }
    )
    bad, ok = root / "book" / "01_bad.ipynb", root / "book" / "02_ok.ipynb"
    assert run_notebooks.main([str(ok)]) == 0
    assert nbformat.read(ok, as_version=4).cells[1].outputs[0]["text"] == "hi\n"
    (results,) = (root / "results").glob("*.json")  # the book's records, with the limits
    data = machine_records.read_results(results)
    assert data["source"] == "book" and data["limits"]["bandwidth"] > 0
    capsys.readouterr()
    before = bad.read_bytes()
    assert run_notebooks.main([str(bad), str(ok)]) == 1
    assert bad.read_bytes() == before, "a failing notebook is left untouched"
    assert "02_ok" not in capsys.readouterr().out, "stopped at the failure"
