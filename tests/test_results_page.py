"""Tests of scripts/results_page.py: the generated results page."""

import json
from pathlib import Path

import pytest

import results_page  # scripts/ is on pytest's pythonpath (pyproject.toml)

CARD = ("environment\n  torch    2.13.0 (build cpu)\n  python   3.11.7\n  device   cpu\n"
        "  cpu      Test CPU\n  threads  2\n  cuda     not available\n  cudnn    not available\n"
        "  gpu      none\n  bf16     emulated (...)\n")


def notebook(path: Path, title: str, outputs: list[str], ignored: tuple[int, ...] = ()) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": [f"# {title}\n", "text"]}]
    for i, text in enumerate(outputs):
        source = "# NBVAL_IGNORE_OUTPUT\nx" if i in ignored else "x"
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source,
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]})
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_reads_card_bench_and_generic_verdicts(tmp_path):
    nb = notebook(tmp_path / "01_x.ipynb", "01 · Topic", [
        CARD,
        "[bench] fusion: baseline ~1.2 ms, trick ~0.8 ms, speed-up ~1.5x [cpu, 2 threads, needs 1.15x] -> FASTER\n",
        "not a verdict -> lower case\nduplicates across workers: 0 of 4 -> CLEAN\n",
    ])
    ch = results_page.read_chapter(nb)
    assert ch.title == "01 · Topic"
    assert ch.card["torch"] == "2.13.0 (build cpu)" and ch.card["threads"] == "2"
    assert [r["verdict"] for r in ch.verdicts] == ["FASTER", "CLEAN"]
    bench_row, generic = ch.verdicts
    assert bench_row["claim"] == "fusion" and bench_row["ratio"] == "~1.5x"
    assert bench_row["device"] == "cpu, 2 threads, needs 1.15x"
    assert generic["claim"] == "duplicates across workers: 0 of 4"


def test_render_has_one_row_per_verdict_and_counts(tmp_path):
    a = results_page.read_chapter(notebook(tmp_path / "01_a.ipynb", "A", [
        CARD, "x -> FASTER\n", "y | z -> NO CLEAR DIFFERENCE\n"], ignored=(2,)))
    b = results_page.read_chapter(notebook(tmp_path / "02_b.ipynb", "B", ["nothing\n"]))
    page = results_page.render([a, b])
    assert page.startswith("# Results")
    assert "2 verdicts from 2 chapters: 1 FASTER, 1 NO CLEAR DIFFERENCE." in page
    assert "| x |  |  |  |  | FASTER | yes |" in page
    assert "| y \\| z |  |  |  |  | NO CLEAR DIFFERENCE | no (varies by machine) |" in page
    assert "This chapter prints no verdict lines." in page
    assert "torch 2.13.0 (build cpu) on cpu (Test CPU, 2 threads" in page


def test_rejects_bad_notebooks(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a readable notebook"):
        results_page.read_chapter(bad)
    with pytest.raises(ValueError, match="no '# Title' heading"):
        results_page.read_chapter(notebook(tmp_path / "t.ipynb", "", []).with_name("t.ipynb"))


def test_committed_results_page_matches_the_stored_notebooks():
    assert results_page.main(["--check"]) == 0, "run: python scripts/results_page.py"
