"""Tests of scripts/results/page.py: the generated results page and its chart."""

from __future__ import annotations

import pytest

from scripts.results import page as results_page
from tricks_helpers import bench
from tricks_helpers.bench import records

CARD = (
    "environment\n  torch    2.13.0 (build cpu)\n  python   3.11.7\n  device   cpu\n"
    "  cpu      Test CPU\n  threads  2\n  cuda     not available\n  cudnn    not available\n"
    "  gpu      none\n  bf16     emulated (...)\n  executed 2026-11-20\n"
    "  commit   0123456789ab\n"
)
LINE = "FASTER 1.22x [1.15-1.31] conv+BN fusion, batch 1 (cpu, 2 threads)\n"
DETAILS = "  baseline ~1.47 ms, trick ~1.21 ms; 31 rounds x 5 calls; outputs checked equal\n"
TABLE = (
    "what          baseline       trick  speed-up [95% interval]  verdict\n"
    "same           ~129 us     ~131 us  1.00x [0.77-1.13]        NO CLEAR DIFFERENCE\n"
    "fast one       ~591 us    ~46.8 us  12.6x [11.0-14.2]        FASTER\n"
)


def chapter(make_notebook, name, title, outputs):
    cells = [f"# {title}\n\ntext"] + [{"source": "x", "outputs": [o]} for o in outputs]
    return results_page.read_chapter(make_notebook(f"{name}.ipynb", cells))


def test_reads_card_verdict_line_and_details(make_notebook):
    ch = chapter(make_notebook, "01_x", "01 · Topic", [CARD, LINE + DETAILS, "not a verdict\n"])
    assert ch.title == "01 · Topic"
    assert ch.card["torch"] == "2.13.0 (build cpu)" and ch.card["threads"] == "2"
    assert ch.card["executed"] == "2026-11-20" and ch.card["commit"] == "0123456789ab"
    (row,) = ch.rows
    assert (row.label, row.verdict, row.ratio, row.lo, row.hi) == (
        "conv+BN fusion, batch 1",
        "FASTER",
        1.22,
        1.15,
        1.31,
    )
    assert (row.baseline, row.trick, row.rounds, row.where) == (
        "~1.47 ms",
        "~1.21 ms",
        "31 x 5",
        "cpu, 2 threads",
    )


def test_reads_table_rows_with_the_cards_device(make_notebook):
    ch = chapter(make_notebook, "03_x", "03 · T", [CARD, TABLE])
    assert [
        (r.label, r.verdict, r.ratio, r.lo, r.hi, r.baseline, r.trick, r.where) for r in ch.rows
    ] == [
        # a stored output of the three-verdict book: its retired word re-decided from the interval
        ("same", "UNDECIDED", 1.0, 0.77, 1.13, "~129 us", "~131 us", "cpu, 2 threads"),
        ("fast one", "FASTER", 12.6, 11.0, 14.2, "~591 us", "~46.8 us", "cpu, 2 threads"),
    ]


def test_a_comparison_printed_as_line_and_table_row_counts_once(make_notebook):
    row = "conv fusion     ~1.47 ms    ~1.21 ms  1.22x [1.15-1.31]        FASTER\n"
    head = TABLE.splitlines(keepends=True)[0]
    ch = chapter(make_notebook, "06_x", "06 · T", [CARD, LINE + DETAILS, head + row])
    assert len(ch.rows) == 1


def test_old_style_and_unrelated_lines_are_not_verdicts(make_notebook):
    old = (
        "[bench] fusion: baseline ~1.2 ms, trick ~0.8 ms, speed-up ~1.5x [cpu, 2 threads, "
        "needs 1.15x] -> FASTER\n"
    )
    indented = "  FASTER 1.2x [1.1-1.3] indented (cpu, 2 threads)\n"
    ch = chapter(make_notebook, "02_x", "02 · T", [CARD, old, "FASTER is a word\n", indented])
    assert ch.rows == []


def test_real_bench_output_round_trips(make_notebook, capsys):
    """What bench.compare and bench.table print is what the page reads."""
    cmp = bench.comparison_from_times("sleep less", [2e-3] * 9, [1e-3] * 9)
    print(cmp)
    print(bench.table({"sleep less, table": cmp}))
    ch = chapter(make_notebook, "04_x", "04 · T", [CARD, capsys.readouterr().out])
    (row,) = ch.rows  # the table row repeats the comparison
    assert (row.verdict, row.ratio, row.baseline, row.trick) == (cmp.verdict, 2.0, "~2 ms", "~1 ms")


def test_table_rows_carry_their_rounds_and_coverage(make_notebook, capsys):
    """Issue 19: the page's coverage comes from each row's round count, never a typed 95%."""
    print(bench.table({"five": bench.comparison_from_times("five", [2e-3] * 5, [1e-3] * 5)}))
    ch = chapter(make_notebook, "04_x", "04 · T", [CARD, capsys.readouterr().out])
    (row,) = ch.rows
    assert (row.rounds, row.covers) == ("5", "93%")
    page = results_page.render([ch])
    assert "| five | ~2 ms | ~1 ms | 2.00x [2.00-2.00] | 93% | FASTER |" in page
    assert "95% interval" not in page


def test_render_has_card_chart_and_one_row_per_verdict(make_notebook):
    a = chapter(make_notebook, "01_a", "01 · A", [CARD, LINE + DETAILS, TABLE])
    b = chapter(make_notebook, "02_b", "02 · B", [CARD, "nothing measured\n"])
    page = results_page.render([a, b])
    assert page.startswith("# Results")
    assert (
        "3 measured verdicts from 1 of 2 chapters: 2 FASTER, 0 SLOWER, 0 SAME, 1 UNDECIDED." in page
    )
    assert (
        "| conv+BN fusion, batch 1 | ~1.47 ms | ~1.21 ms | 1.22x [1.15-1.31] | 97% | FASTER "
        "| cpu, 2 threads |" in page
    )
    # a table printed before the coverage columns: no round count, so no coverage claimed
    assert "| same | ~129 us | ~131 us | 1.00x [0.77-1.13] | ? | UNDECIDED |" in page
    assert "This chapter prints no measured verdicts." in page
    assert (
        "torch 2.13.0 (build cpu) on cpu (Test CPU, 2 threads; GPU: none; bf16: "
        "emulated (...)), executed 2026-11-20 at commit 0123456789ab."
    ) in page
    assert f"```{{figure}} {results_page.CHART_NAME}" in page and ":alt: " in page


def test_page_without_verdicts_has_no_chart(make_notebook):
    b = chapter(make_notebook, "02_b", "02 · B", [CARD])
    assert "{figure}" not in results_page.render([b])


def test_label_pipes_are_escaped(make_notebook):
    ch = chapter(
        make_notebook, "01_a", "01 · A", [CARD, "SLOWER 0.50x [0.40-0.60] a | b (cpu, 1 thread)\n"]
    )
    row = "| a \\| b | ? | ? | 0.50x [0.40-0.60] | ? | SLOWER | cpu, 1 threads |"
    assert row in results_page.render([ch])


def test_chart_is_reproducible_and_checked_by_its_data(make_notebook, tmp_path):
    chapters = [chapter(make_notebook, "01_a", "01 · A", [CARD, LINE + DETAILS, TABLE])]
    book = tmp_path / "book"
    book.mkdir()
    results_page.write(chapters, book)
    chart = book / results_page.CHART_NAME
    first = chart.read_bytes()
    assert b"<svg" in first
    assert results_page.chart_digest(chart) == results_page.data_digest(chapters)
    assert results_page.stale(chapters, book) == []
    results_page.render_chart(chapters, tmp_path / "again.svg")
    assert (tmp_path / "again.svg").read_bytes() == first, "the same data draws the same bytes"
    chart.write_bytes(first.replace(b"<svg", b"<svg data-touched='1'"))  # bytes differ, data not
    assert results_page.stale(chapters, book) == []
    chapters[0].rows[0].ratio = 9.9  # a measurement changed
    assert results_page.stale(chapters, book) == [
        "results.md differs from the stored outputs",
        f"{results_page.CHART_NAME} is missing or plots other data",
    ]


def test_chart_is_removed_when_nothing_is_measured(make_notebook, tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / results_page.CHART_NAME).write_text("<svg/>")
    chapters = [chapter(make_notebook, "01_a", "01 · A", [CARD])]
    assert results_page.stale(chapters, book)[-1].endswith("no chapter prints a measured verdict")
    results_page.write(chapters, book)
    assert not (book / results_page.CHART_NAME).exists()
    assert results_page.stale(chapters, book) == []


def test_rejects_bad_notebooks(tmp_path, make_notebook):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a readable notebook"):
        results_page.read_chapter(bad)
    with pytest.raises(ValueError, match="no '# Title' heading"):
        results_page.read_chapter(make_notebook("t.ipynb", ["no title here"]))


def test_main_writes_then_checks_clean(tmp_book, capsys):
    root = tmp_book({"01_a": ["# 01 · A", {"outputs": [CARD, LINE + DETAILS]}]})
    assert results_page.main(["--check"], root=root) == 1
    assert results_page.main([], root=root) == 0
    assert (root / "book" / results_page.CHART_NAME).is_file()
    assert results_page.main(["--check"], root=root) == 0


def test_committed_results_page_matches_the_stored_notebooks():
    assert results_page.main(["--check"]) == 0, "run: python -m scripts.results.page"


def test_chart_group_titles_are_the_part_before_the_colon():
    assert results_page._plain_title("03 · Data loading: storage formats, `DataLoader` knobs") == (
        "03 · Data loading"
    )
    assert results_page._plain_title("10 · The **small** tricks") == "10 · The small tricks"


LIMITS = {
    "threads": 2,
    "cache_bytes": 2**25,
    "bandwidth": 9.5e9,
    "matmul": {"float32": 5.25e10, "int8": 1e11},
    "skipped": {"float16": "no kernel"},
}


def _results(root, source, threads, verdict_times, limits=None):
    from scripts.book import machine_records

    b, t = verdict_times
    c = bench.comparison_from_times("fusion", [b] * 6, [t] * 6, threads=1, show=False, why="1 op")
    facts = machine_records.machine_facts(
        cpu="Test CPU", flags=frozenset({"avx2"}), environ={}, threads=threads, gpu="none"
    )
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    data = machine_records.merge_results(
        None, facts, {"01_x": ok}, [c.record(chapter="01_x")], source, limits
    )
    return machine_records.write_results(data, root / "results")


def test_page_from_records_has_why_and_machines_side_by_side(tmp_book):
    root = tmp_book({"01_x": ["# 01 · X", {"source": "x", "outputs": [CARD]}]})
    _results(root, "book", 2, (2e-3, 1e-3))
    assert results_page.main([], root=root) == 0
    page = (root / "book" / "results.md").read_text()
    assert "| fusion | 1 op | FASTER 2.00x \\[2.00-2.00\\] |" in page
    # a record names no predicted direction: the page stamps no explains/does-not-explain
    assert "explain" not in page
    assert "## Speed-ups by machine" not in page  # one machine: no side-by-side charts
    _results(root, "survey", 4, (1e-3, 1e-3), LIMITS)
    assert results_page.main(["--check"], root=root) == 1  # a new machine makes the page stale
    assert results_page.main([], root=root) == 0
    page = (root / "book" / "results.md").read_text()
    assert page.index("## Which tricks pay off where") < page.index("## Add your machine")
    assert "| comparison | why | AVX2 only, 2 cores (book) | AVX2 only, 4 cores |" in page
    assert "| fusion | 1 op | FASTER 2.00x \\[2.00-2.00\\] | SAME 1.00x \\[1.00-1.00\\] |" in page
    assert "- AVX2 only, 2 cores (book): limits not measured" in page  # the book's has none
    assert (
        "limits on 2 threads: copy ~9.5 GB/s; matmul float32 ~52.5 GFLOP/s, int8 ~100 GOP/s, "
        "float16 not measured;"
    ) in page
    assert "```{figure} results_machines_01_x.svg" in page  # a chart per chapter
    assert (root / "book" / "results_machines_01_x.svg").is_file()
    assert results_page.main(["--check"], root=root) == 0


def test_stored_verdict_lines_have_records_in_the_reference_file(repo_root):
    """Records and stored outputs cannot drift apart: each stored verdict line has a record."""
    files = results_page.machine_files(repo_root)
    if not files or files[0]["source"] != "book":
        pytest.skip("no reference results file yet: the lead's `make execute` writes it")
    recorded = {(r["chapter"], r["label"], r["verdict"]) for r in files[0]["records"]}
    undecided = {"SAME", "UNDECIDED"}  # what the retired word may be re-decided to
    missing = []
    for path in results_page.chapter_notebooks(repo_root):
        for row in results_page.read_chapter(path).rows:
            # a stored line with the retired word is re-decided from its rounded interval,
            # its record from the unrounded one: at a threshold the two may differ
            if row.retired and any((path.stem, row.label, v) in recorded for v in undecided):
                continue
            if (path.stem, row.label, row.verdict) not in recorded:
                missing.append((path.stem, row.label, row.verdict))
    assert missing == []


def test_a_comparison_recorded_twice_is_one_row_with_the_tables_why():
    c = bench.comparison_from_times("fusion", [2e-3] * 6, [1e-3] * 6, threads=1, show=False)
    shown = c.record(chapter="01_x")  # its verdict line: no why
    row = records.make_record(c, label="fusion, table", chapter="01_x", why="1 op fewer")
    chapter = results_page.Chapter(notebook="01_x", title="01 · X")
    results_page.apply_records([chapter], {"records": [shown, row]})
    assert [(r.label, r.why) for r in chapter.rows] == [("fusion", "1 op fewer")]


def test_with_records_the_printed_lines_are_not_parsed_for_rows(tmp_book, monkeypatch):
    """Issue 28: records first; the text reader runs only as the fallback."""
    from scripts.results import rows as results_rows

    root = tmp_book({"01_x": ["# 01 · X", {"source": "x", "outputs": [CARD, LINE + DETAILS]}]})
    parsed = []
    real = results_rows.parse_lines
    monkeypatch.setattr(results_rows, "parse_lines", lambda *a: parsed.append(1) or real(*a))
    assert results_page.main([], root=root) == 0  # no results file: the fallback reads rows
    assert parsed and "conv+BN fusion, batch 1" in (root / "book" / "results.md").read_text()
    parsed.clear()
    _results(root, "book", 2, (2e-3, 1e-3))
    assert results_page.main([], root=root) == 0
    assert parsed == [], "printed lines parsed although records exist"
    page = (root / "book" / "results.md").read_text()
    assert "| fusion |" in page and "conv+BN fusion, batch 1" not in page
    assert "on cpu (Test CPU, 2 threads" in page  # the card is still read from the outputs


def test_rows_read_the_four_verdicts_and_rounds_added_while_undecided(make_notebook):
    lines = (
        "SAME 1.00x [0.95-1.05] seeded workers (cpu, 2 threads)\n"
        "  baseline ~1 ms, trick ~1 ms; ~9 rounds, ~99% interval\n"
        "NO CLEAR DIFFERENCE 1.00x [0.95-1.05] stored before (cpu, 2 threads)\n"
        "NO CLEAR DIFFERENCE 1.15x [1.10-1.20] rounded onto the line (cpu, 2 threads)\n"
        "NO CLEAR DIFFERENCE 1.00x [1.00-1.10] maybe over it (cpu, 2 threads)\n"
    )
    ch = chapter(make_notebook, "01_x", "01 · T", [CARD, lines])
    assert [(r.label, r.verdict) for r in ch.rows] == [
        ("seeded workers", "SAME"),
        ("stored before", "SAME"),  # the retired word, re-decided from its interval
        ("rounded onto the line", "UNDECIDED"),  # it was not FASTER: lo lay within rounding
        ("maybe over it", "UNDECIDED"),  # 1.10 printed may be 1.104: not surely SAME
    ]
    assert ch.rows[0].rounds == "~9" and ch.rows[0].covers == "~96%"
    assert [r.retired for r in ch.rows] == [False, True, True, True]
