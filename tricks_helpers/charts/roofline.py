"""A roofline chart: measured limits and each measured kernel as a point (chapters 04, 07)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tricks_helpers._checks import check_number, check_type

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["roofline_chart"]

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
        points: label -> ``(intensity in ops/byte, achieved ops/s, dtype)``, ``dtype`` a
            name in ``peaks`` (the roof that point is held against); drawn in order. A
            2-tuple ``(intensity, ops/s)`` has no dtype and is held against the highest peak.
        title: a title above the chart.
        width: figure width in inches.

    A roof is an upper bound (chapter 07): every point must sit at or below the roof drawn
    for its dtype, ``min(bandwidth * intensity, peaks[dtype])``. Raise the limits with the
    page's own rates first (:meth:`limits.Limits.raised`) so that they are the highest rates
    this machine reached.

    Returns:
        The matplotlib figure; its one axes holds one line per roof and one per point.

    Raises:
        TypeError: on non-mapping peaks or points; ValueError: on a non-positive number,
            no peaks or no points, a dtype with no peak, or a point above its roof.
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
        if len(pair) not in (2, 3):
            raise ValueError(f"{where}: point {name!r} must be (intensity, ops/s[, dtype])")
        for v in pair[:2]:
            check_number(where, f"point {name!r}", v, minimum=0.0, strict_minimum=True)
        if len(pair) == 3 and pair[2] not in peaks:
            raise ValueError(
                f"{where}: point {name!r} has dtype {pair[2]!r}, which has no peak; "
                f"peaks: {list(peaks)}"
            )
        intensity, rate = pair[0], pair[1]
        peak = peaks[pair[2]] if len(pair) == 3 else max(peaks.values())
        roof = min(bandwidth * intensity, peak)
        if rate > roof * (1 + 1e-9):
            raise ValueError(
                f"{where}: point {name!r} at {rate / 1e9:.4g} GOP/s is above its roof "
                f"({roof / 1e9:.4g} GOP/s, {pair[2] if len(pair) == 3 else 'highest'} peak and "
                "bandwidth): a roof is the highest rate measured here; raise the limits with "
                "Limits.raised"
            )
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
    for i, (name, (intensity, rate, *_)) in enumerate(points.items()):
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
