"""Tests of tricks_helpers.charts: the one speed-up chart."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.container import ErrorbarContainer

from tricks_helpers import bench, charts

ROWS = [("a", 2.0, 1.8, 2.2), ("b", 1.0, 0.9, 1.12), ("c", 0.5, 0.45, 0.55, "SLOWER")]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def comparison(label, ratios):
    m = bench.Measurement((1e-3,) * len(ratios), "cpu")
    return bench.Comparison(label, m, m, tuple(ratios), threads=1)


def errorbars(fig):
    return [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]


def vertical_lines(fig):
    return sorted(
        round(line.get_xdata()[0], 6)
        for line in fig.axes[0].lines
        if len(set(line.get_xdata())) == 1 and len(line.get_xdata()) == 2
    )


def test_one_error_bar_per_row_and_the_thresholds_drawn():
    fig = charts.speedup_chart(ROWS)
    assert len(errorbars(fig)) == 3
    t = bench.NOISE_THRESHOLD
    assert vertical_lines(fig) == [round(1 / t, 6), 1.0, round(t, 6)]
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [tick.get_text() for tick in ax.get_yticklabels()] == ["a", "b", "c"]
    assert "noise threshold 1.1x" in ax.get_xlabel()


def test_markers_say_the_verdict():
    fig = charts.speedup_chart(ROWS)
    markers = [c.lines[0].get_marker() for c in errorbars(fig)]
    assert markers == ["o", "D", "s"]  # FASTER, NO CLEAR DIFFERENCE (decided), SLOWER (given)


def test_groups_are_titled_inside_the_figure_and_comparisons_are_rows():
    c = comparison("fused", [1.5, 1.6, 1.55, 1.58, 1.52, 1.6, 1.57])
    fig = charts.speedup_chart({"batch 1": {"fusion": c}, "batch 64": ROWS[:2]}, title="T")
    assert len(errorbars(fig)) == 3
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["batch 1", "batch 64"]
    assert fig.axes[0].get_yticklabels()[0].get_text() == "fusion"
    assert fig.axes[0].get_title() == "T"
    assert charts.speedup_rows([c])[0].verdict == c.verdict


def test_a_group_title_too_long_for_the_axes_is_shortened_to_end_inside_them():
    long = "06 · Inference fusion: conv + BN folding, re-parameterization, channels_last, compile"
    fig = charts.speedup_chart({long: ROWS[:2], "short": ROWS[2:]}, width=5)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    right = ax.get_window_extent(renderer).x1
    first, second = ax.texts
    assert first.get_text().endswith("…") and long.startswith(first.get_text()[:-1].rstrip())
    assert first.get_window_extent(renderer).x1 <= right
    assert second.get_text() == "short"  # what fits is left as it is


def test_references_are_drawn_as_hollow_marks():
    fig = charts.speedup_chart(ROWS, references={"a": 3.0}, reference_label="FLOPs")
    marks = [line for line in fig.axes[0].lines if line.get_marker() == "x"]
    assert len(marks) == 1 and marks[0].get_xdata()[0] == 3.0
    assert "FLOPs" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_long_labels_are_cut():
    fig = charts.speedup_chart([("x" * 60, 1.0, 0.9, 1.1)])
    assert fig.axes[0].get_yticklabels()[0].get_text() == "x" * 47 + "…"


@pytest.mark.parametrize(
    "data, kw, error, match",
    [
        ([], {}, ValueError, "no rows"),
        ({}, {}, ValueError, "no rows"),
        ({"group": []}, {}, ValueError, "no rows"),
        ({3: ROWS}, {}, TypeError, "group title"),
        ("abc", {}, TypeError, "rows must be"),
        ([("a", 1.0, 0.9)], {}, ValueError, r"\(label, ratio, low, high"),
        ([("a", 1.0, 1.1, 1.2)], {}, ValueError, "low <= ratio <= high"),
        ([("a", 0.0, 0.0, 1.2)], {}, ValueError, "0 < low"),
        ([("a", -1.0, 0.9, 1.2)], {}, ValueError, ">= 0"),
        ([("a", float("nan"), 0.9, 1.2)], {}, ValueError, "finite"),
        ([("a", 1.0, 0.9, 1.2, "BETTER")], {}, ValueError, "verdict 'BETTER'"),
        ([(1, 1.0, 0.9, 1.2)], {}, TypeError, "label"),
        ([1.0], {}, TypeError, "row"),
        (ROWS, {"threshold": 1.0}, ValueError, "above 1"),
        (ROWS, {"references": {"zz": 1.0}}, ValueError, "name a row"),
        (ROWS, {"references": {"a": 0.0}}, ValueError, "> 0"),
    ],
)
def test_bad_input_is_rejected(data, kw, error, match):
    with pytest.raises(error, match=match):
        charts.speedup_chart(data, **kw)
