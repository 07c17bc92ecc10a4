"""The speed-up chart: speed-ups with their intervals, on a log scale (chapters 04-07, results).

Every measured speed-up in the book is drawn the same way: one row per comparison, the median
per-round ratio as a marker, its confidence interval as an error bar, on a log axis (2x faster
and 2x slower are equally far from 1), with 1.0 drawn solid and the noise threshold and its
inverse dashed, so a reader sees the verdict rule (:func:`tricks_helpers.bench.verdicts.decide`)
beside the data. Markers and colours say the verdict (readable without colour too). Rows may be
grouped under titles drawn inside the figure (a chapter, a batch size, a series of widths).

The results page draws its across-machines charts with the same function, one series (a
colour and marker) per machine. A figure's image is not compared by nbval (a page prints or
asserts every claim a chart shows); its text form is, and names the chart's width and groups,
never its height, which follows how many rows a time budget allowed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from tricks_helpers._checks import check_number, check_type
from tricks_helpers.bench.comparisons import Comparison
from tricks_helpers.bench.verdicts import (
    FASTER,
    NOISE_THRESHOLD,
    SAME,
    SLOWER,
    UNDECIDED,
    VERDICTS,
    decide,
)
from tricks_helpers.charts.fit import fit_inside

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["SpeedupRow", "speedup_rows", "speedup_chart", "VERDICT_STYLE", "SERIES_STYLES"]

#: verdict -> (colour, marker): distinguishable without colour too.
VERDICT_STYLE = {
    FASTER: ("#1b7837", "o"),
    SLOWER: ("#b2182b", "s"),
    SAME: ("#2166ac", "D"),
    UNDECIDED: ("#636363", "^"),
}
#: one (colour, marker) per series (a machine on the results page), in order (then repeated).
SERIES_STYLES = (
    ("#1f77b4", "o"),
    ("#d95f02", "s"),
    ("#7570b3", "D"),
    ("#1b9e77", "^"),
    ("#e7298a", "v"),
    ("#666666", "P"),
)
_TICK_ROOM = 36  # pixels a tick label like "0.91x" needs beside the next one
_MAX_LABEL = 48  # characters of a row label before it is cut with "…"


@dataclass(frozen=True)
class SpeedupRow:
    """One plotted speed-up: ``ratio`` inside ``[lo, hi]``, all positive, and its verdict."""

    label: str
    ratio: float
    lo: float
    hi: float
    verdict: str


def _row(where: str, item: Any, label: str | None, threshold: float) -> SpeedupRow:
    if isinstance(item, Comparison):
        lo, hi = item.interval
        return SpeedupRow(label or item.label, item.ratio, lo, hi, item.verdict)
    check_type(where, "row", item, (tuple, list))
    if len(item) not in (4, 5):
        raise ValueError(
            f"{where}: a row is (label, ratio, low, high[, verdict]), got {len(item)} items"
        )
    name, *numbers = item[:4]
    check_type(where, "row label", name, str)
    ratio, lo, hi = (check_number(where, f"{name!r} ratio", v, minimum=0.0) for v in numbers)
    if min(ratio, lo, hi) <= 0 or not lo <= ratio <= hi:
        raise ValueError(
            f"{where}: row {name!r} needs 0 < low <= ratio <= high, got {lo}, {ratio}, {hi}"
        )
    verdict = item[4] if len(item) == 5 else decide(lo, hi, threshold)
    if verdict not in VERDICTS:
        raise ValueError(f"{where}: row {name!r} has verdict {verdict!r}, not one of {VERDICTS}")
    return SpeedupRow(name, ratio, lo, hi, verdict)


def speedup_rows(
    rows: Mapping[str, Comparison] | Iterable[Comparison | tuple],
    threshold: float = NOISE_THRESHOLD,
) -> list[SpeedupRow]:
    """Normalise comparisons or ``(label, ratio, low, high[, verdict])`` tuples to rows.

    A mapping's keys are the labels; a tuple without a verdict gets :func:`decide`'s.

    Raises:
        TypeError: on a row that is neither a Comparison nor a tuple.
        ValueError: on a malformed row (non-positive numbers, ratio outside its interval,
            unknown verdict) or no rows at all.
    """
    where = "speedup_rows"
    if isinstance(rows, Mapping):
        out = [
            _row(where, c, check_type(where, "label", k, str), threshold) for k, c in rows.items()
        ]
    elif isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise TypeError(f"{where}: rows must be comparisons or tuples, got {type(rows).__name__}")
    else:
        out = [_row(where, r, None, threshold) for r in rows]
    if not out:
        raise ValueError(f"{where}: no rows to draw")
    return out


def _groups(data: Any, threshold: float) -> list[tuple[str, list[SpeedupRow]]]:
    """``{title: rows}`` -> titled groups; plain rows (or ``{label: Comparison}``) -> one group."""
    if isinstance(data, Mapping) and not all(isinstance(v, Comparison) for v in data.values()):
        return [
            (check_type("speedup_chart", "group title", t, str), speedup_rows(r, threshold))
            for t, r in data.items()
        ]
    return [("", speedup_rows(data, threshold))]


_Point = tuple[int | None, SpeedupRow]  # (series index or None, the row)


def _series_groups(
    data: Any, series: list[str], threshold: float
) -> list[tuple[str, list[tuple[str, list[_Point]]]]]:
    """``{title: {label: {series name: (ratio, lo, hi[, verdict])}}}`` -> groups of rows of
    points, each point with its series' index."""
    where = "speedup_chart"
    check_type(where, "data (with series)", data, Mapping)
    out = []
    for title, rows in data.items():
        check_type(where, "group title", title, str)
        check_type(where, f"group {title[:60]!r}", rows, Mapping)
        group = []
        for label, by_series in rows.items():
            check_type(where, "row label", label, str)
            check_type(where, f"row {label[:60]!r}", by_series, Mapping)
            points = []
            for name, point in by_series.items():
                if name not in series:
                    raise ValueError(
                        f"{where}: row {label[:60]!r} names an unknown series {name!r}"
                    )
                check_type(where, f"row {label[:60]!r} point", point, (tuple, list))
                points.append((series.index(name), _row(where, (label, *point), None, threshold)))
            if not points:
                raise ValueError(f"{where}: row {label[:60]!r} has no point")
            group.append((label, sorted(points, key=lambda p: p[0])))
        if not group:
            raise ValueError(f"{where}: no rows to draw in group {title[:60]!r}")
        out.append((title, group))
    if not out:
        raise ValueError(f"{where}: no rows to draw")
    return out


@cache
def _figure_class() -> type:
    """The figure class of :func:`speedup_chart`: its text form does not follow its rows.

    A notebook shows a figure as an image and, for nbval, as text: matplotlib's ``<Figure size
    750x464 with 1 Axes>`` names the height, which follows how many rows a time budget
    allowed (more on a faster machine or a GPU). This text names what is fixed: the chart,
    its width, and its groups (issue 33). Made on first use: matplotlib is imported lazily.
    """
    from matplotlib.figure import Figure

    class SpeedupFigure(Figure):
        groups: int = 0

        def __repr__(self) -> str:
            groups = f", {self.groups} groups" if self.groups > 1 else ""
            return f"<speed-up chart, {self.bbox.width:.0f} px wide{groups}>"

    return SpeedupFigure


def speedup_chart(
    data: Mapping[str, Any] | Iterable[Comparison | tuple],
    *,
    title: str = "",
    xlabel: str = "speed-up (baseline time / trick time), log scale",
    threshold: float = NOISE_THRESHOLD,
    references: Mapping[str, float] | None = None,
    reference_label: str = "expected",
    width: float = 7.5,
    series: Sequence[str] | None = None,
) -> Figure:
    """Draw speed-ups with their intervals, one row each, optionally under group titles.

    Without ``series`` (chapters 04-07), each row is one marker styled by its verdict
    (:data:`VERDICT_STYLE`). With ``series`` (the results page's across-machines charts), each
    row holds one marker per series (a machine), styled by the series (:data:`SERIES_STYLES`)
    and hollow where its verdict is UNDECIDED. Every text (titles, labels, legend) is
    drawn as text, never as mathtext; a group title too long for the axes is shortened with
    "…" (:func:`fit_inside`).

    Args:
        data: rows (comparisons, ``{label: comparison}``, or ``(label, ratio, low, high[,
            verdict])`` tuples) or ``{group title: rows}``; drawn top to bottom in order.
            With ``series``: ``{group title: {row label: {series name: (ratio, low, high[,
            verdict])}}}`` (a group title may be ``""``).
        title: a title above the chart.
        xlabel: the x axis label (the dashed threshold lines are named after it).
        threshold: the noise threshold drawn dashed, with its inverse.
        references: optional ``{row label: value}`` drawn as hollow markers (e.g. what a FLOP
            count predicts), named ``reference_label`` in the legend.
        reference_label: the legend entry of ``references``.
        width: figure width in inches (the height follows the number of rows).
        series: the names of the series, in legend order (then ``data`` is as above).

    Returns:
        The matplotlib figure (created with pyplot: ``plt.show()`` shows it, ``plt.close``
        frees it). Its text form (what nbval compares) names its width and groups, not its
        height: ``<speed-up chart, 750 px wide, 2 groups>``, on any machine. Its one axes
        holds one error bar container per marker.

    Raises:
        TypeError, ValueError: as :func:`speedup_rows`; a threshold not above 1; a reference
            that is not positive or names no row; series that are not distinct strings, or a
            point of a series not named.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    threshold = check_number("speedup_chart", "threshold", threshold)
    if threshold <= 1:
        raise ValueError(f"speedup_chart: threshold must be above 1, got {threshold}")
    if series is None:
        groups = [
            (t, [(r.label, [(None, r)]) for r in rows]) for t, rows in _groups(data, threshold)
        ]
    else:
        check_type("speedup_chart", "series", series, (list, tuple))
        series = [check_type("speedup_chart", "series name", n, str) for n in series]
        if not series or len(set(series)) != len(series):
            raise ValueError(f"speedup_chart: series must be distinct names, got {series}")
        groups = _series_groups(data, series, threshold)
    rows = [r for _, group in groups for _, points in group for _, r in points]
    labels_drawn = {label for _, group in groups for label, _ in group}
    references = dict(references or {})
    for name, value in references.items():
        check_number("speedup_chart", f"reference {name!r}", value, minimum=0.0)
        if value <= 0 or name not in labels_drawn:
            raise ValueError(f"speedup_chart: reference {name!r} must be > 0 and name a row")
    n_rows = sum(len(group) for _, group in groups)
    titled = sum(1 for t, _ in groups if t)
    row_height = 0.26 if series is None else max(0.26, 0.22 * len(series))
    fig, ax = plt.subplots(
        figsize=(width, 1.4 + row_height * n_rows + 0.32 * titled), FigureClass=_figure_class()
    )
    fig.groups = len(groups)
    y, ticks, labels, group_texts = 0.0, [], [], []
    step = 0.7 / len(series) if series else 0.0
    for group_title, group in groups:
        if group_title:
            y -= 0.5
            text = ax.text(
                0.005,
                y,
                group_title,
                transform=ax.get_yaxis_transform(),
                ha="left",
                va="center",
                fontweight="bold",
                zorder=5,
                parse_math=False,
                in_layout=False,  # cut to the axes below, after the layout
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
            )
            group_texts.append(text)
            y -= 0.8
        else:
            y -= 0.7
        for label, points in group:
            for j, r in points:
                if j is None:
                    colour, marker = VERDICT_STYLE[r.verdict]
                    at, face, cap = y, colour, 3
                else:
                    colour, marker = SERIES_STYLES[j % len(SERIES_STYLES)]
                    at = y + (j - (len(series) - 1) / 2) * step
                    face = "white" if r.verdict == UNDECIDED else colour
                    cap = 2
                ax.errorbar(
                    [r.ratio],
                    [at],
                    xerr=[[r.ratio - r.lo], [r.hi - r.ratio]],
                    fmt=marker,
                    color=colour,
                    ecolor=colour,
                    markerfacecolor=face,
                    capsize=cap,
                    markersize=5,
                )
            if label in references:
                ax.plot([references[label]], [y], "x", color="black", markersize=6)
            ticks.append(y)
            labels.append(label if len(label) <= _MAX_LABEL else label[:47] + "…")
            y -= 1.0
    lo = min([r.lo for r in rows] + [1 / threshold] + list(references.values())) / 1.3
    hi = max([r.hi for r in rows] + [threshold] + list(references.values())) * 1.3
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    steps = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
    xticks = [t for t in steps if lo <= t <= hi]
    ax.xaxis.set_major_locator(FixedLocator(xticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:.2g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1.0, color="black", linewidth=1.0)
    for x in (threshold, 1 / threshold):
        ax.axvline(x, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(ticks, labels, parse_math=False)
    ax.set_ylim(y + 0.3, 0.0)
    ax.set_xlabel(
        f"{xlabel}; dashed: noise threshold {threshold:g}x and 1/{threshold:g}x", parse_math=False
    )
    if series is None:
        styles = [(v, c, m) for v, (c, m) in VERDICT_STYLE.items()]
    else:
        styles = [(n, *SERIES_STYLES[j % len(SERIES_STYLES)]) for j, n in enumerate(series)]
    handles = [
        plt.Line2D([], [], color=c, marker=m, linestyle="", label=name) for name, c, m in styles
    ]
    if references:
        handles.append(
            plt.Line2D([], [], color="black", marker="x", linestyle="", label=reference_label)
        )
    legend = ax.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=len(handles) if series is None else 1,
        fontsize=8,
        frameon=False,
    )
    for text in legend.get_texts():
        text.set_parse_math(False)
    if title:
        ax.set_title(title, pad=22, parse_math=False)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    # label the threshold lines too where the axis leaves room between them and 1.0
    per_decade = ax.get_window_extent().width / math.log10(hi / lo)
    if per_decade * math.log10(threshold) >= _TICK_ROOM:
        xticks = sorted(set(xticks) | {threshold, 1 / threshold})
        ax.xaxis.set_major_locator(FixedLocator(xticks))
    for text in group_texts:
        fit_inside(text, ax)
    return fig
