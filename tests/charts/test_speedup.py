"""Tests of tricks_helpers.charts.speedup (and fit_inside): the one speed-up chart."""

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
    assert markers == ["o", "^", "s"]  # FASTER, UNDECIDED (1.12 > 1.1: decided), SLOWER (given)
    same = charts.speedup_chart([("d", 1.0, 0.95, 1.05)])
    assert [c.lines[0].get_marker() for c in errorbars(same)] == ["D"]  # SAME


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


class _TimeLimit:
    """Fail a test (TimeoutError) that runs past ``seconds``: a hang must not hang the suite."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        import signal

        def stop(*_):
            raise TimeoutError(f"still running after {self.seconds} s")

        self.old = signal.signal(signal.SIGALRM, stop)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        import signal

        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def test_a_20000_character_group_title_is_cut_in_bounded_time():
    """Issue 32: fit_inside shortened one character per draw (minutes for 20,000)."""
    long = "06 · a group title " + "x" * 20_000
    with _TimeLimit(60):
        fig = charts.speedup_chart({long: ROWS[:2], "short": ROWS[2:]})
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    first, second = ax.texts
    assert first.get_text().endswith("…") and long.startswith(first.get_text()[:-1].rstrip())
    assert len(first.get_text()) < 200
    assert first.get_window_extent(renderer).x1 <= ax.get_window_extent(renderer).x1
    assert second.get_text() == "short"


def test_fit_inside_keeps_the_longest_prefix_that_fits():
    fig = charts.speedup_chart({"g": ROWS}, width=5)
    ax = fig.axes[0]
    text = ax.texts[0]
    full = "a long title made of words, " * 10
    text.set_text(full)
    charts.fit_inside(text, ax)
    renderer = fig.canvas.get_renderer()
    right = ax.get_window_extent(renderer).x1
    kept = text.get_text()[:-1]
    assert text.get_window_extent(renderer).x1 <= right
    text.set_text(full[: len(kept) + 1].rstrip() + "…")  # one character more no longer fits
    assert text.get_window_extent(renderer).x1 > right


def test_labels_with_dollars_are_drawn_as_text_not_mathtext():
    """Issue 32: `$x^2$` in a label was drawn as math (and `$` alone can fail to parse)."""
    label, title = "cost $5 vs $x^2$", "group $a_b$"
    fig = charts.speedup_chart({title: [(label, 2.0, 1.8, 2.2)]}, title="chart $t$")
    fig.canvas.draw()  # an unbalanced `$` would raise here if it were parsed as math
    ax = fig.axes[0]
    texts = [*ax.get_yticklabels(), *ax.texts, ax.title, ax.xaxis.label]
    texts += list(ax.get_legend().get_texts())
    assert label in [t.get_text() for t in ax.get_yticklabels()]
    assert [t for t in texts if t.get_parse_math()] == []
    unbalanced = charts.speedup_chart([("costs $5", 2.0, 1.8, 2.2)])
    unbalanced.canvas.draw()


def test_the_figures_text_does_not_follow_its_row_count():
    """Issue 33: nbval compares a figure's text/plain; its height followed the row count."""
    from IPython.core.formatters import PlainTextFormatter

    few = charts.speedup_chart({"g1": ROWS[:1], "g2": ROWS[:1]})
    many = charts.speedup_chart({"g1": ROWS * 3, "g2": ROWS * 2})
    assert few.get_size_inches()[1] < many.get_size_inches()[1]  # the image still grows
    text = PlainTextFormatter()
    assert text(few) == text(many) == "<speed-up chart, 750 px wide, 2 groups>"
    assert repr(charts.speedup_chart(ROWS)) == "<speed-up chart, 750 px wide>"


SERIES = ["machine-a (book)", "machine-b"]


def test_one_series_per_machine_hollow_where_no_clear_difference():
    points = {
        "fusion": {SERIES[0]: (2.0, 1.8, 2.2, "FASTER"), SERIES[1]: (1.0, 0.9, 1.1)},
        "only a": {SERIES[0]: (0.5, 0.45, 0.55, "SLOWER")},
    }
    fig = charts.speedup_chart({"01 · X": points}, series=SERIES)
    bars = errorbars(fig)
    assert len(bars) == 3, "one marker per machine and row"
    styles = [(c.lines[0].get_marker(), c.lines[0].get_markerfacecolor()) for c in bars]
    assert styles == [("o", "#1f77b4"), ("s", "white"), ("o", "#1f77b4")]
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == SERIES
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fusion", "only a"]
    assert [t.get_text() for t in ax.texts] == ["01 · X"]
    t = bench.NOISE_THRESHOLD
    assert vertical_lines(fig) == [round(1 / t, 6), 1.0, round(t, 6)]


@pytest.mark.parametrize(
    "data, series, error, match",
    [
        ({"g": {"r": {"zz": (1.0, 0.9, 1.1)}}}, SERIES, ValueError, "unknown series 'zz'"),
        ({"g": {"r": {SERIES[0]: (1.0, 1.1, 1.2)}}}, SERIES, ValueError, "low <= ratio"),
        ({"g": {"r": {SERIES[0]: (1.0, 0.9, 1.1, "X")}}}, SERIES, ValueError, "verdict 'X'"),
        ({"g": {"r": {}}}, SERIES, ValueError, "no point"),
        ({"g": {}}, SERIES, ValueError, "no rows"),
        ({}, SERIES, ValueError, "no rows"),
        ({"g": {"r": {"a": (1.0, 0.9, 1.1)}}}, ["a", "a"], ValueError, "distinct"),
        ({"g": {"r": {"a": (1.0, 0.9, 1.1)}}}, [], ValueError, "distinct"),
        ({"g": {"r": {"a": (1.0, 0.9, 1.1)}}}, "a", TypeError, "series"),
        ({"g": {"r": {"a": 1.0}}}, ["a"], TypeError, "point"),
        (ROWS, SERIES, TypeError, "data"),
    ],
)
def test_bad_series_data_is_rejected(data, series, error, match):
    with pytest.raises(error, match=match):
        charts.speedup_chart(data, series=series)
