"""The confidence interval of a median and its coverage (used by :mod:`.verdicts`).

:func:`median_interval` takes order statistics ``[x_(k), x_(n+1-k)]`` of ``n`` values, with
the largest ``k`` whose coverage reaches the target confidence; :func:`interval_coverage` is
the exact coverage of that interval for ``n`` values (below the target for ``n < 6`` at 95%,
where the interval is the full range) and :func:`coverage_percent` the whole percent a page
may print for it (rounded down: a label never claims more than the interval has).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence

from tricks_helpers._checks import check_int, check_number

__all__ = ["CONFIDENCE", "median_interval", "interval_coverage", "coverage_percent"]

#: Target coverage of the interval of the median per-round ratio.
CONFIDENCE = 0.95


def _rank_exact(n: int, confidence: float) -> int:
    """The ``k`` of :func:`median_interval`, with exact integer binomial sums.

    The first ``k >= 1`` with ``k == n // 2`` or coverage ``1 - 2 P(Binomial(n, 1/2) <= k)``
    below ``confidence``. The sum grows one exact term at a time (``comb(n, k + 1)`` from
    ``comb(n, k)``), and each coverage is the same float as ``1 - 2 * (sum / 2**n)``. Every
    step is integer arithmetic on ``n``-bit numbers, so it takes ``O(n**2)`` bit operations:
    milliseconds up to a few thousand values.
    """
    total = 2**n
    term = n  # comb(n, 1)
    cdf = 1 + n  # sum of comb(n, i) for i <= 1
    k = 1
    while k < n // 2 and 1 - 2 * (cdf / total) >= confidence:
        term = term * (n - k) // (k + 1)  # comb(n, k + 1)
        cdf += term
        k += 1
    return k


#: Above this many values the rank is found in floating point first (see :func:`_rank`).
_EXACT_UP_TO = 2000
#: Coverages closer than this to ``confidence`` are decided exactly (the float sums are
#: within about 1e-9 of the true coverage; this margin is a hundred times wider).
_MARGIN = 1e-7


def _rank_float(n: int, confidence: float) -> int | None:
    """:func:`_rank_exact` in ``O(n)`` float operations, or ``None`` where it cannot be sure.

    The binomial terms are summed from their logarithms; a coverage within :data:`_MARGIN` of
    ``confidence`` (the only place the float sum could decide differently) returns ``None``.
    """
    if 1 - confidence < _MARGIN:
        return None
    log_term = -n * math.log(2)  # log of comb(n, 0) / 2**n
    cdf = math.exp(log_term)
    for k in range(1, n // 2 + 1):
        log_term += math.log(n - k + 1) - math.log(k)
        cdf += math.exp(log_term)
        if k == n // 2:
            return k
        coverage = 1 - 2 * cdf
        if abs(coverage - confidence) < _MARGIN:
            return None
        if coverage < confidence:
            return k
    return 1  # n < 2: no step taken


@functools.lru_cache(maxsize=256)
def _rank(n: int, confidence: float) -> int:
    """The order-statistic rank of :func:`median_interval`, cached per ``(n, confidence)``.

    Exact sums up to :data:`_EXACT_UP_TO` values; above, the float scan decides unless a
    coverage falls within :data:`_MARGIN` of ``confidence``, where the exact sums decide. The
    result is the same ``k`` as the exact scan in both cases.
    """
    if n > _EXACT_UP_TO:
        k = _rank_float(n, confidence)
        if k is not None:
            return k
    return _rank_exact(n, confidence)


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free confidence interval of the median of ``values``.

    Uses order statistics: ``[x_(k), x_(n+1-k)]`` with the largest ``k`` whose coverage
    ``1 - 2 P(Binomial(n, 1/2) <= k - 1)`` is at least ``confidence``. With fewer than 6
    values no such ``k`` exists for 95%, and the full range ``[min, max]`` is returned (its
    coverage is ``1 - 2**(1 - n)``: 94% for 5 values). ``O(n log n)``: sorting, then at most
    ``n / 2`` steps to find ``k`` (cached per ``(n, confidence)``); 10,000 values take
    milliseconds.

    Raises:
        TypeError: on a string or a value that is not a real number.
        ValueError: on an empty sequence, a confidence outside ``(0, 1)``, or a NaN value
            (NaN has no place in an order, so the interval would depend on where it sits).
    """
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"median_interval: values must be a sequence of numbers, got {values!r}")
    if len(values) == 0:
        raise ValueError("median_interval: no values")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"median_interval: values must be numbers, got {v!r}")
    check_number(
        "median_interval", "confidence", confidence, minimum=0.0, maximum=1.0, strict_minimum=True
    )
    xs = sorted(values)
    if any(x != x for x in xs):
        raise ValueError("median_interval: values hold NaN")
    n = len(xs)
    k = _rank(n, float(confidence))
    return xs[k - 1], xs[n - k]


def _outside_count(n: int, k: int) -> int:
    """``2**n`` times the chance that ``[x_(k), x_(n+1-k)]`` misses the median, per side."""
    return sum(math.comb(n, i) for i in range(k))


def interval_coverage(n: int, confidence: float = CONFIDENCE) -> float:
    """Exact coverage of :func:`median_interval` of ``n`` values: ``1 - 2 P(B(n, 1/2) < k)``.

    ``1 - 2**(1 - n)`` below 6 values at 95% (75% at 3, 93.75% at 5), at least
    ``confidence`` from there on; 0 for a single value (a point is no interval).

    Raises:
        TypeError: on a non-integer ``n``.
        ValueError: on ``n < 1`` or a confidence outside ``(0, 1)``.
    """
    n = check_int("interval_coverage", "n", n, minimum=1)
    check_number(
        "interval_coverage",
        "confidence",
        confidence,
        minimum=0.0,
        maximum=1.0,
        strict_minimum=True,
    )
    k = _rank(n, float(confidence))
    return 1 - 2 * (_outside_count(n, k) / 2**n)


def coverage_percent(n: int, confidence: float = CONFIDENCE) -> int:
    """:func:`interval_coverage` in whole percent, rounded down (exact integer arithmetic).

    Raises:
        TypeError, ValueError: as :func:`interval_coverage`.
    """
    n = check_int("coverage_percent", "n", n, minimum=1)
    interval_coverage(n, confidence)  # the argument checks
    k = _rank(n, float(confidence))
    return (100 * (2**n - 2 * _outside_count(n, k))) // 2**n
