"""Summaries of several comparisons: a table side by side, a count of verdicts, a time change.

Each takes :class:`~tricks_helpers.bench.verdicts.Comparison` objects as they are (nothing is
re-measured); :func:`table` also appends one record per row where ``TRICKS_RECORDS`` names a
file (:mod:`tricks_helpers.bench.records`), carrying each row's invariant partner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tricks_helpers._checks import check_type
from tricks_helpers.bench.intervals import coverage_percent
from tricks_helpers.bench.records import emit, make_record
from tricks_helpers.bench.verdicts import VERDICTS, Comparison, fmt_measured, fmt_time

__all__ = ["tally", "time_change_text", "table"]


def tally(comparisons: Iterable[Comparison]) -> str:
    """How many comparisons reached each verdict: ``FASTER ~1, SLOWER ~0, NO CLEAR DIFFERENCE
    ~4 of 5`` (counts carry ``~``: they are measurements, masked like the verdict words).

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


def table(
    comparisons: Mapping[str, Comparison] | Iterable[Comparison],
    why: Mapping[str, str] | None = None,
) -> str:
    """A fixed-layout text table of comparisons: what, baseline, trick, speed-up [interval],
    rounds, the interval's coverage (``covers``, from the rounds) and verdict.

    Rows keep the given order; measured cells carry ``~`` and the speed-up its interval, so
    the sanitize file masks exactly those and the verdict words. Where ``TRICKS_RECORDS``
    names a file, each row's record (labelled with the row's name, with ``why[name]`` as its
    invariant partner where given) is appended to it; ``why`` is not printed.

    Raises:
        TypeError: on a row that is not a :class:`Comparison` or a ``why`` text not a string.
        ValueError: on a ``why`` name that is no row.
    """
    rows = (
        list(comparisons.items())
        if isinstance(comparisons, Mapping)
        else [(c.label, c) for c in comparisons]
    )
    for name, c in rows:
        check_type("table", f"row {name!r}", c, Comparison)
    why = dict(why or {})
    unknown = set(why) - {name for name, _ in rows}
    if unknown:
        raise ValueError(f"table: why names no row: {sorted(unknown)}")
    for name, text in why.items():
        check_type("table", f"why[{name!r}]", text, str)
    for name, c in rows:
        emit(make_record(c, label=name, why=why.get(name)))
    head = ("what", "baseline", "trick", "speed-up [interval]", "rounds", "covers", "verdict")
    body = [
        (
            name,
            fmt_time(c.baseline.median),
            fmt_time(c.trick.median),
            c.speedup_text(),
            str(c.rounds),
            f"{coverage_percent(c.rounds)}%",
            c.verdict,
        )
        for name, c in rows
    ]
    width = max(len(r[0]) for r in body + [head])
    lines = []
    for name, b, t, s, n, cov, v in [head] + body:
        lines.append(f"{name:<{width}}  {b:>10}  {t:>10}  {s:<24} {n:>6}  {cov:>6}  {v}")
    return "\n".join(lines)
