"""Cut a label to fit inside its axes (the charts' row and group titles, chapters 04-07)."""

from __future__ import annotations

from typing import Any

__all__ = ["fit_inside"]


def fit_inside(text: Any, ax: Any) -> None:
    """Shorten a left-aligned text artist with "…" until it ends inside the axes.

    Bounded whatever the text's length: it keeps the longest prefix that fits, found by
    bisection over at most one character per pixel of the axes' width (about ten layouts of
    at most that many characters), never one draw per character.
    """
    renderer = ax.figure.canvas.get_renderer()
    right = ax.get_window_extent(renderer).x1
    full = text.get_text()
    # no glyph is narrower than a pixel but a zero-width one: a longer prefix cannot fit
    most = min(len(full), max(int(right - text.get_window_extent(renderer).x0), 0) + 1)

    def fits(keep: int) -> bool:
        text.set_text(full[:keep].rstrip() + "…")
        return text.get_window_extent(renderer).x1 <= right

    if len(full) <= most:
        text.set_text(full)
        if text.get_window_extent(renderer).x1 <= right:
            return
        most = len(full) - 1
    lo, hi = 0, most  # the longest prefix in [lo, hi] whose cut text fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    text.set_text(full[:lo].rstrip() + "…")
