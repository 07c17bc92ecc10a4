"""Tests of scripts/results/machines.py: the across-machines section and its charts."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from scripts.book import machine_records
from scripts.results import machines as results_machines
from scripts.results import overview as results_overview
from tricks_helpers import bench


def results(source, threads, times, label="fusion", chapter="01_x", limits=None, **machine):
    records = []
    for b, t in times:
        c = bench.comparison_from_times(label, [b] * 6, [t] * 6, threads=1, show=False)
        records.append(c.record(chapter=chapter))
    args = dict(cpu="Test CPU", flags=frozenset({"avx2"}), environ={}, gpu="none", arch="x86_64")
    facts = machine_records.machine_facts(threads=threads, **{**args, **machine})
    ok = {"status": "ok", "error": "", "seconds": 1.0}
    return machine_records.merge_results(None, facts, {chapter: ok}, records, source, limits)


def test_chapter_points_one_row_per_comparison_one_point_per_machine():
    book = results("book", 2, [(2e-3, 1e-3), (1e-3, 1e-3)])
    mine = results("survey", 4, [(1e-3, 1e-3)])
    points = results_machines.chapter_points([book, mine])
    assert list(points) == ["01_x"]
    assert points["01_x"] == {
        "fusion": {
            "AVX2 only, 2 cores (book)": [2.0, 2.0, 2.0, "FASTER"],
            "AVX2 only, 4 cores": [1.0, 1.0, 1.0, "SAME"],
        },
        "fusion (2)": {"AVX2 only, 2 cores (book)": [1.0, 1.0, 1.0, "SAME"]},
    }


def test_machines_are_named_by_what_decides_the_tricks_and_a_capped_run_is_an_emulation():
    """Issue 40: columns keyed by native bf16 / VNNI / AMX / GPU / cores, not machine ids."""
    book = results("book", 2, [(2e-3, 1e-3)])
    bf16 = results("survey", 2, [(2e-3, 1e-3)], flags=frozenset({"avx512_bf16", "avx512_vnni"}))
    amx = results("survey", 8, [(2e-3, 1e-3)], flags=frozenset({"amx_bf16", "amx_tile"}))
    capped = results("survey", 2, [(2e-3, 1e-3)], environ={"ATEN_CPU_CAPABILITY": "default"})
    again = results("survey", 2, [(2e-3, 1e-3)])
    assert results_machines.column_names([book, bf16, amx, capped, again]) == [
        "AVX2 only, 2 cores (book)",
        "native bf16 + VNNI, 2 cores",
        "AMX (bf16 + int8), 8 cores",
        "older-CPU emulation (capped), 2 cores",
        "AVX2 only, 2 cores",
    ]


def test_a_comparison_recorded_under_two_labels_is_one_row():
    """Issue 40: a verdict line and its chart row with the same measurement are one comparison."""
    book = results("book", 2, [(2e-3, 1e-3)])
    book["records"].append({**book["records"][0], "label": "fusion, chart label"})
    assert list(results_machines.chapter_points([book, book])["01_x"]) == ["fusion"]


def test_chart_title_and_legend_stay_inside_the_figure():
    long = "01 · A chapter title long enough to run past the axes of a narrow chart " * 2
    names = ["machine-a (book)", "machine-b"]
    points = {
        "fusion": {
            names[0]: [2.0, 1.8, 2.2, "FASTER"],
            names[1]: [1.0, 0.9, 1.1, "UNDECIDED"],
        }
    }
    fig = results_machines.machines_chart(long, points, names)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    (heading,) = [t for t in ax.texts if t.get_text().startswith("01 ·")]
    assert heading.get_text().endswith("…"), "a title too long is shortened"
    assert heading.get_window_extent(renderer).x1 <= ax.get_window_extent(renderer).x1 + 0.5
    assert len(ax.containers) == 2, "one marker (error bar) per machine"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == names
    plt.close(fig)


def test_charts_written_checked_and_left_overs_removed(tmp_path):
    files = [results("book", 2, [(2e-3, 1e-3)]), results("survey", 4, [(1e-3, 1e-3)])]
    titles = {"01_x": "01 · X"}
    assert results_machines.stale_charts(files, titles, tmp_path) == [
        "results_machines_01_x.svg is missing or plots other data"
    ]
    (tmp_path / "results_machines_09_gone.svg").write_text("<svg/>")
    results_machines.write_charts(files, titles, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results_machines_01_x.svg"]
    assert results_machines.stale_charts(files, titles, tmp_path) == []
    files[1] = results("survey", 4, [(3e-3, 1e-3)])  # a changed measurement
    assert results_machines.stale_charts(files, titles, tmp_path) == [
        "results_machines_01_x.svg is missing or plots other data"
    ]
    assert results_machines.stale_charts(files[:1], titles, tmp_path) == [
        "results_machines_01_x.svg is left over"  # one machine: no across-machines charts
    ]


def test_a_figure_per_chapter_and_limits_in_words():
    limits = {
        "threads": 4,
        "cache_bytes": 2**25,
        "bandwidth": 2e10,
        "matmul": {"float32": 1e11},
        "skipped": {},
    }
    files = [
        results("book", 2, [(2e-3, 1e-3)]),
        results("survey", 4, [(1e-3, 1e-3)], limits=limits),
    ]
    text = "\n".join(results_machines.chart_figures(files, {"01_x": "01 · X"}))
    assert results_machines.limits_text(limits) == (
        "limits on 4 threads: copy ~20 GB/s; matmul float32 ~100 GFLOP/s"
    )
    assert "```{figure} results_machines_01_x.svg\n:alt: 01 · X: one row per comparison" in text


def test_the_facts_name_the_architecture_and_an_arm_cpu_is_not_without_avx2():
    x86 = results("book", 2, [(2e-3, 1e-3)], flags=frozenset())
    assert results_machines._machine_facts_text(x86).startswith("Test CPU (x86_64: no AVX2; 2 ")
    del x86["machine"]["arch"]  # a file written before the fact: as it was shown then
    assert results_machines._machine_facts_text(x86).startswith("Test CPU (no AVX2; 2 threads")
    mac = results("survey", 8, [(1e-3, 1e-3)], cpu="Apple M2", arch="arm64", flags=frozenset())
    mac["machine"]["gpu"] = "Apple MPS"
    text = results_machines._machine_facts_text(mac)
    assert text.startswith("Apple M2 (arm64: none of sme2/sme/sve2/sve/bf16/i8mm; 8 threads; ")
    assert "GPU: Apple MPS;" in text
    mac["machine"]["isa"] = ["bf16", "i8mm"]
    assert results_machines._machine_facts_text(mac).startswith("Apple M2 (arm64: bf16, i8mm;")


def test_the_chapters_row_names_each_failed_chapter_with_its_error():
    book = results("book", 2, [(2e-3, 1e-3)])
    mine = results("survey", 4, [(1e-3, 1e-3)])
    failed = {"status": "failed", "error": "code cell 19: BackendCompilerFailed", "seconds": 2.0}
    mine["chapters"]["02_y"] = failed
    assert results_machines.chapters_text(book) == "1 of 1 ran"
    assert (
        results_machines.chapters_text(mine)
        == "1 of 2 ran; 02_y FAILED: code cell 19: BackendCompilerFailed"
    )
    text = "\n".join(results_overview.machine_details([book, mine]))  # the page prints it whole
    assert "02_y FAILED: code cell 19: BackendCompilerFailed" in text


def test_a_20000_character_chapter_title_is_cut_in_bounded_time():
    """Issue 32: fit_inside shortened one character per draw (minutes for 20,000)."""
    import signal

    def stop(*_):
        raise TimeoutError("machines_chart still running after 60 s")

    names = ["machine-a (book)", "machine-b"]
    points = {"fusion": {names[0]: [2.0, 1.8, 2.2, "FASTER"]}}
    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    try:
        fig = results_machines.machines_chart("01 · $x$ " + "t" * 20_000, points, names)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    (heading,) = fig.axes[0].texts
    assert heading.get_text().startswith("01 · $x$ t") and heading.get_text().endswith("…")
    assert not heading.get_parse_math(), "a title is drawn as text, not mathtext"
    plt.close(fig)


def test_the_chart_is_the_books_speedup_chart_with_a_series_per_machine():
    """Issue 28: one chart function; the machines' chart is charts.speedup_chart's."""
    names = ["machine-a (book)", "machine-b"]
    points = {"fusion": {names[0]: [2.0, 1.8, 2.2, "FASTER"], names[1]: [1.0, 0.9, 1.1, "X"]}}
    with pytest.raises(ValueError, match="verdict 'X'"):  # checked as every speed-up row
        results_machines.machines_chart("01 · X", points, names)
    points["fusion"][names[1]][3] = "NO CLEAR DIFFERENCE"  # retired by issue 39: no verdict now
    with pytest.raises(ValueError, match="verdict 'NO CLEAR DIFFERENCE'"):
        results_machines.machines_chart("01 · X", points, names)
    points["fusion"][names[1]][3] = "UNDECIDED"
    fig = results_machines.machines_chart("01 · X", points, names)
    assert repr(fig) == "<speed-up chart, 750 px wide>"
    assert "noise threshold 1.1x" in fig.axes[0].get_xlabel()
    plt.close(fig)
