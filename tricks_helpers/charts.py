"""The book's one chart: speed-ups with their intervals, on a log scale (chapters 04-07, results).

Every measured speed-up in the book is drawn the same way: one row per comparison, the median
per-round ratio as a marker, its confidence interval as an error bar, on a log axis (2x faster
and 2x slower are equally far from 1), with 1.0 drawn solid and the noise threshold and its
inverse dashed, so a reader sees the verdict rule (:func:`tricks_helpers.bench.verdicts.decide`)
beside the data. Markers and colours say the verdict (readable without colour too). Rows may be
grouped under titles drawn inside the figure (a chapter, a batch size, a series of widths).

Figures are not compared by nbval: a page prints or asserts every claim a chart shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tricks_helpers._checks import check_number, check_type
from tricks_helpers.bench.verdicts import (
    FASTER,
    NO_CLEAR_DIFFERENCE,
    NOISE_THRESHOLD,
    SLOWER,
    VERDICTS,
    Comparison,
    decide,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "SpeedupRow",
    "speedup_rows",
    "speedup_chart",
    "VERDICT_STYLE",
    "roofline_chart",
    "fit_inside",
]

#: verdict -> (colour, marker): distinguishable without colour too.
VERDICT_STYLE = {
    FASTER: ("#1b7837", "o"),
    SLOWER: ("#b2182b", "s"),
    NO_CLEAR_DIFFERENCE: ("#636363", "D"),
}
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


def speedup_chart(
    data: Mapping[str, Any] | Iterable[Comparison | tuple],
    *,
    title: str = "",
    xlabel: str = "speed-up (baseline time / trick time), log scale",
    threshold: float = NOISE_THRESHOLD,
    references: Mapping[str, float] | None = None,
    reference_label: str = "expected",
    width: float = 7.5,
) -> Figure:
    """Draw speed-ups with their intervals, one row each, optionally under group titles.

    Args:
        data: rows (comparisons, ``{label: comparison}``, or ``(label, ratio, low, high[,
            verdict])`` tuples) or ``{group title: rows}``; drawn top to bottom in order.
        title: a title above the chart.
        xlabel: the x axis label (the dashed threshold lines are named after it).
        threshold: the noise threshold drawn dashed, with its inverse.
        references: optional ``{row label: value}`` drawn as hollow markers (e.g. what a FLOP
            count predicts), named ``reference_label`` in the legend.
        reference_label: the legend entry of ``references``.
        width: figure width in inches (the height follows the number of rows).

    Returns:
        The matplotlib figure (created with pyplot: ``plt.show()`` shows it, ``plt.close``
        frees it). Its one axes holds one error bar container per row.

    Raises:
        TypeError, ValueError: as :func:`speedup_rows`; a threshold not above 1; a reference
            that is not positive or names no row.
    """
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    threshold = check_number("speedup_chart", "threshold", threshold)
    if threshold <= 1:
        raise ValueError(f"speedup_chart: threshold must be above 1, got {threshold}")
    groups = _groups(data, threshold)
    rows = [r for _, g in groups for r in g]
    references = dict(references or {})
    for name, value in references.items():
        check_number("speedup_chart", f"reference {name!r}", value, minimum=0.0)
        if value <= 0 or name not in {r.label for r in rows}:
            raise ValueError(f"speedup_chart: reference {name!r} must be > 0 and name a row")
    titled = sum(1 for t, _ in groups if t)
    fig, ax = plt.subplots(figsize=(width, 1.4 + 0.26 * len(rows) + 0.32 * titled))
    y, ticks, labels, group_texts = 0.0, [], [], []
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
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0},
            )
            group_texts.append(text)
            y -= 0.8
        else:
            y -= 0.7
        for r in group:
            colour, marker = VERDICT_STYLE[r.verdict]
            ax.errorbar(
                [r.ratio],
                [y],
                xerr=[[r.ratio - r.lo], [r.hi - r.ratio]],
                fmt=marker,
                color=colour,
                ecolor=colour,
                capsize=3,
                markersize=5,
            )
            if r.label in references:
                ax.plot([references[r.label]], [y], "x", color="black", markersize=6)
            ticks.append(y)
            labels.append(r.label if len(r.label) <= _MAX_LABEL else r.label[:47] + "…")
            y -= 1.0
    lo = min([r.lo for r in rows] + [1 / threshold] + list(references.values())) / 1.3
    hi = max([r.hi for r in rows] + [threshold] + list(references.values())) * 1.3
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    steps = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
    xticks = [t for t in steps if lo <= t <= hi]
    if hi / lo < 20:  # a narrow range: label the threshold lines too
        xticks = sorted(set(xticks) | {threshold, 1 / threshold})
    ax.xaxis.set_major_locator(FixedLocator(xticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:.2g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.axvline(1.0, color="black", linewidth=1.0)
    for x in (threshold, 1 / threshold):
        ax.axvline(x, color="black", linewidth=0.8, linestyle="--")
    ax.set_yticks(ticks, labels)
    ax.set_ylim(y + 0.3, 0.0)
    ax.set_xlabel(f"{xlabel}; dashed: noise threshold {threshold:g}x and 1/{threshold:g}x")
    handles = [
        plt.Line2D([], [], color=c, marker=m, linestyle="", label=v)
        for v, (c, m) in VERDICT_STYLE.items()
    ]
    if references:
        handles.append(
            plt.Line2D([], [], color="black", marker="x", linestyle="", label=reference_label)
        )
    ax.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=len(handles),
        fontsize=8,
        frameon=False,
    )
    if title:
        ax.set_title(title, pad=22)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    for text in group_texts:
        fit_inside(text, ax)
    return fig


def fit_inside(text: Any, ax: Any) -> None:
    """Shorten a left-aligned text artist with "…" until it ends inside the axes."""
    renderer = ax.figure.canvas.get_renderer()
    right = ax.get_window_extent(renderer).x1
    full = text.get_text()
    keep = len(full)
    while keep > 1 and text.get_window_extent(renderer).x1 > right:
        keep -= 1
        text.set_text(full[:keep].rstrip() + "…")


_ROOF_MARKERS = "osD^vP*X"


def roofline_chart(
    bandwidth: float,
    peaks: Mapping[str, float],
    points: Mapping[str, tuple[float, float]],
    *,
    title: str = "",
    width: float = 7.5,
) -> Figure:
    """Draw a roofline: the measured limits, and each measured kernel as a point (04, 07).

    Log-log axes: x is arithmetic intensity (operations per byte moved), y is achieved
    GFLOP/s. The bandwidth roof is the line ``bandwidth * intensity``; each peak is a
    horizontal roof, drawn from where it meets the bandwidth line. A point under the sloped
    part is limited by memory, under a flat part by arithmetic; its distance below the roof is
    what the kernel leaves on the table.

    Args:
        bandwidth: measured memory bandwidth, bytes/s (e.g. :attr:`limits.Limits.bandwidth`).
        peaks: name -> measured peak, operations/s (e.g. :attr:`limits.Limits.matmul`).
        points: label -> ``(intensity in ops/byte, achieved ops/s)``; drawn in order.
        title: a title above the chart.
        width: figure width in inches.

    Returns:
        The matplotlib figure; its one axes holds one line per roof and one per point.

    Raises:
        TypeError: on non-mapping peaks or points; ValueError: on a non-positive number,
            or no peaks or no points.
    """
    import matplotlib.pyplot as plt

    where = "roofline_chart"
    bandwidth = check_number(where, "bandwidth", bandwidth, minimum=0.0, strict_minimum=True)
    check_type(where, "peaks", peaks, Mapping)
    check_type(where, "points", points, Mapping)
    if not peaks or not points:
        raise ValueError(f"{where}: needs at least one peak and one point")
    for name, value in peaks.items():
        check_number(where, f"peak {name!r}", value, minimum=0.0, strict_minimum=True)
    for name, pair in points.items():
        check_type(where, f"point {name!r}", pair, (tuple, list))
        if len(pair) != 2:
            raise ValueError(f"{where}: point {name!r} must be (intensity, ops/s)")
        for v in pair:
            check_number(where, f"point {name!r}", v, minimum=0.0, strict_minimum=True)
    xs = [p[0] for p in points.values()] + [v / bandwidth for v in peaks.values()]
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    fig, ax = plt.subplots(figsize=(width, 4.8))
    ax.plot(
        [x_lo, x_hi],
        [bandwidth * x_lo / 1e9, bandwidth * x_hi / 1e9],
        color="black",
        linewidth=1.2,
        label=f"memory bandwidth {bandwidth / 1e9:.3g} GB/s",
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (name, peak) in enumerate(sorted(peaks.items(), key=lambda kv: -kv[1])):
        ridge = peak / bandwidth
        ax.plot(
            [max(ridge, x_lo), x_hi],
            [peak / 1e9] * 2,
            linestyle="--",
            linewidth=1.0,
            color=colours[i % len(colours)],
            label=f"{name} matmul limit",
        )
    for i, (name, (intensity, rate)) in enumerate(points.items()):
        ax.plot(
            [intensity],
            [rate / 1e9],
            _ROOF_MARKERS[i % len(_ROOF_MARKERS)],
            color="#333333",
            markerfacecolor="white" if i >= len(_ROOF_MARKERS) else "#333333",
            markersize=6,
            linestyle="",
        )
        ax.annotate(
            name, (intensity, rate / 1e9), textcoords="offset points", xytext=(5, 3), fontsize=7
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel("arithmetic intensity (operations per byte of memory traffic), log scale")
    ax.set_ylabel("achieved GFLOP/s (int8: GOP/s), log scale")
    ax.grid(which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
