"""scripts/results/compat.py: the compatibility table, chapter by torch release, as text."""

from __future__ import annotations

from test_compat_schema import chapter, record

from scripts.compat import records as compat_records
from scripts.results import compat as results_compat
from scripts.results import page as results_page

SKIP = [{"section": "int4", "reason": "needs torchao>=0.18, this run has 0.16.0"}]
NOW = {"01_a": "a" * 64, "07_q": "a" * 64, "09_new": "c" * 64}


def test_rows_chapters_columns_releases_cells_in_words():
    old = record(chapters={"01_a": chapter(skipped=SKIP), "07_q": chapter("failed")})
    new = record("2.13.0", torchao="0.18.0", chapters={"01_a": chapter(), "07_q": chapter()})
    text = "\n".join(results_compat.render_compat([old, new], NOW))
    assert (
        "| chapter | torch 2.10.0+cu128 (torchao 0.16.0) | torch 2.13.0+cu128 (torchao 0.18.0) |"
        in text
    )
    assert (
        "| 01_a | ran, 1 section skipped: int4 (needs torchao&gt;=0.18, this run has 0.16.0) "
        "| ran |" in text
    )
    assert "| 07_q | failed at code cell 3 (ImportError) | ran |" in text
    assert "- torch 2.10.0+cu128, 07_q: failed at code cell 3: ImportError: no X" in text
    assert "machine amd-epyc-avx2-only-2t, Python 3.11.7" in text
    assert "Outputs were not compared" in text


def test_a_chapter_whose_code_changed_is_stale_and_a_missing_run_says_so():
    rec = record(chapters={"01_a": chapter(), "07_q": chapter("failed", code_sha256="b" * 64)})
    rows = [line for line in results_compat.render_compat([rec], NOW) if line.startswith("| 0")]
    assert rows == [
        "| 01_a | ran |",
        "| 07_q | failed at code cell 3 (ImportError) (stale) |",
        "| 09_new | not run |",
    ]


def test_no_record_no_section_and_only_recorded_releases_are_columns():
    assert results_compat.render_compat([], NOW) == []
    text = "\n".join(results_compat.render_compat([record("2.15.0")], NOW))
    assert "torch 2.15.0" in text and "2.10.0" not in text and "2.13.0" not in text
    assert "from the row torchao&gt;=0.16,&lt;0.17;" in text
    unbounded = record("2.15.0", torchao_requirement="torchao")
    text = "\n".join(results_compat.render_compat([unbounded], NOW))
    assert "torchao 0.16.0 unbounded (TORCHAO\\_FOR\\_TORCH has no row for this release)" in text


def test_a_contributed_string_stays_text():
    evil = [{"section": "<script>x</script>", "reason": "`{eval}` | [a](b)"}]
    rec = record(chapters={"01_a": chapter(skipped=evil)})
    text = "\n".join(results_compat.render_compat([rec], NOW))
    assert "<script>" not in text and "&lt;script&gt;" in text and "\\`\\{eval\\}\\` \\|" in text


def test_the_results_page_shows_the_table_and_goes_stale_when_a_chapter_changes(
    tmp_book, make_notebook
):
    root = tmp_book({"01_a": ["# 01 · A", {"source": "x = 1"}]})
    assert results_page.main([], root=root) == 0
    assert "Compatibility" not in (root / "book" / "results.md").read_text()
    digest = results_compat.current_digests([root / "book" / "01_a.ipynb"])["01_a"]
    rec = record(chapters={"01_a": chapter(code_sha256=digest)})
    compat_records.write_record(rec, root / "results" / "compat")
    assert results_page.main(["--check"], root=root) == 1
    assert results_page.main([], root=root) == 0
    assert "| 01_a | ran |" in (root / "book" / "results.md").read_text()
    make_notebook(root / "book" / "01_a.ipynb", ["# 01 · A", {"source": "x = 2"}])
    assert results_page.main(["--check"], root=root) == 1
    assert results_page.main([], root=root) == 0
    assert "| 01_a | ran (stale) |" in (root / "book" / "results.md").read_text()
    (root / "results" / "compat" / "torch-2.10.0.json").write_text('{"schema": 1}')
    assert results_page.main([], root=root) == 1  # a bad record: a clear error, nothing written
