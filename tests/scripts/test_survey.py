"""Tests of scripts/survey.py: chapters run with records on, failures recorded, compare."""

from __future__ import annotations

import pytest

import machine_records  # scripts/ is on pytest's pythonpath (pyproject.toml)
import survey
from tricks_helpers.limits import Limits

LIMITS = Limits(
    2, 2**25, "sysfs L3", 2**27, 9e9, {"float32": 5e10}, {"float32": 512}, {"int8": "x"}
)

SHOW = (
    "from tricks_helpers import bench\n"
    "bench.comparison_from_times('tiny', [2e-3] * 6, [1e-3] * 6, threads=1, why='half the work')"
)


@pytest.mark.slow
def test_survey_records_comparisons_and_goes_on_after_a_failure(tmp_book, capsys):
    root = tmp_book(
        {
            "01_bad": ["# Bad", {"source": SHOW, "outputs": []}, {"source": "1/0", "outputs": []}],
            "02_ok": ["# OK", {"source": SHOW, "outputs": []}],
        }
    )
    before = (root / "book" / "02_ok.ipynb").read_bytes()
    assert survey.main([], root=root) == 1  # one chapter failed
    out = capsys.readouterr().out
    assert "failed: 01_bad" in out
    assert (root / "book" / "02_ok.ipynb").read_bytes() == before, "the book is never written"
    (path,) = (root / "results").glob("*.json")
    data = machine_records.read_results(path)
    assert data["source"] == "survey"
    assert data["chapters"]["01_bad"]["status"] == "failed"
    assert "ZeroDivisionError" in data["chapters"]["01_bad"]["error"]
    assert data["chapters"]["02_ok"]["status"] == "ok"
    assert data["limits"]["bandwidth"] > 0 and "float32" in data["limits"]["matmul"]
    assert [(r["chapter"], r["label"], r["why"]) for r in data["records"]] == [
        ("01_bad", "tiny", "half the work"),
        ("02_ok", "tiny", "half the work"),
    ]


def test_compare_needs_a_reference_and_this_machines_file(tmp_path, capsys):
    assert survey.main(["--compare", "--results", str(tmp_path)]) == 1
    assert "no results file with source 'book'" in capsys.readouterr().err


def test_survey_with_a_stub_runner_writes_and_compare_agrees(tmp_path, capsys):
    from tricks_helpers import bench

    def run(path, timeout):
        c = bench.comparison_from_times("x", [2e-3] * 6, [1e-3] * 6, threads=1, show=False)
        return {"status": "ok", "error": "", "seconds": 0.1}, [c.record(chapter=path.stem)]

    nb = [tmp_path / "01_a.ipynb"]
    mine = survey.survey(nb, tmp_path / "results", run=run, measure=lambda: LIMITS)
    ref = survey.survey(nb, tmp_path / "ref", source="book", run=run, measure=lambda: LIMITS)
    assert machine_records.read_results(mine)["limits"] == {
        "threads": 2,
        "cache_bytes": 2**25,
        "bandwidth": 9e9,
        "matmul": {"float32": 5e10},
        "skipped": {"int8": "x"},
    }
    assert survey.reference_file(tmp_path / "ref") == ref
    assert survey.main(["--compare", str(ref), "--results", str(mine.parent)]) == 0
    assert "agree    01_a: x: FASTER" in capsys.readouterr().out


def test_a_survey_on_the_books_machine_never_replaces_the_books_records(tmp_path, capsys):
    """The bug of issue 22: same machine id, the book's file was overwritten by the survey."""
    from tricks_helpers import bench

    def run_with(label):
        def run(path, timeout):
            c = bench.comparison_from_times(label, [2e-3] * 6, [1e-3] * 6, threads=1, show=False)
            return {"status": "ok", "error": "", "seconds": 0.1}, [c.record(chapter=path.stem)]

        return run

    results = tmp_path / "results"
    nb = [tmp_path / "01_a.ipynb"]
    book = survey.survey(nb, results, source="book", run=run_with("x"), measure=lambda: LIMITS)
    before = book.read_bytes()
    mine = survey.survey(nb, results, run=run_with("y"), measure=lambda: LIMITS)
    assert mine != book and mine.name.endswith("-survey.json")
    assert mine.name.removesuffix("-survey.json") == book.stem, "one machine, two files"
    assert book.read_bytes() == before, "the book's reference records are untouched"
    assert machine_records.read_results(mine)["source"] == "survey"
    assert survey.reference_file(results) == book
    # --compare reads this machine's survey (label y), not the book's file (label x)
    assert survey.main(["--compare", "--results", str(results)]) == 1
    out = capsys.readouterr().out
    assert "missing  01_a: x (not run here)" in out
    assert "0 of 1 reference verdicts agree" in out
