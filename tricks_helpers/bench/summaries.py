"""Summaries of comparisons in words: a count of verdicts, a time change.

Each takes :class:`~tricks_helpers.bench.comparisons.Comparison` objects as they are (nothing is
re-measured). Comparisons side by side are a table: :func:`tricks_helpers.bench.tables.table`.
"""

from __future__ import annotations

from collections.abc import Iterable

from tricks_helpers._checks import check_type
from tricks_helpers.bench.comparisons import Comparison
from tricks_helpers.bench.verdicts import VERDICTS, fmt_measured

__all__ = ["tally", "time_change_text"]


def tally(comparisons: Iterable[Comparison]) -> str:
    """How many comparisons reached each verdict: ``FASTER ~1, SLOWER ~0, SAME ~3,
    UNDECIDED ~1 of 5`` (counts carry ``~``: they are measurements, masked like the verdict words).

    Raises:
        TypeError: on an item that is not a :class:`Comparison`.
        ValueError: on no comparisons.
    """
    items = list(comparisons)
    for c in items:
        check_type("tally", "comparison", c, Comparison)
    if not items:
        raise ValueError("tally: no comparisons")
    counts = ", ".join(f"{v} ~{sum(c.verdict == v for c in items)}" for v in VERDICTS)
    return f"{counts} of {len(items)}"


def time_change_text(c: Comparison) -> str:
    """What the trick does to the time per call, from the interval: ``time x~1.04 to x~1.19``.

    The factors are trick time / baseline time at the interval's ends (``1 / hi`` and
    ``1 / lo``): both above 1 is a measured cost, both below 1 a measured saving, whatever
    the verdict's noise threshold says. Measured, so printed with ``~``.

    Raises:
        TypeError: on a non-:class:`Comparison`.
    """
    check_type("time_change_text", "c", c, Comparison)
    lo, hi = c.interval
    return f"time x{fmt_measured(1 / hi)} to x{fmt_measured(1 / lo)}"
