"""Measurements, comparisons, their verdicts and how they are printed (introduced in chapter 01).

The rule: **invariants are compared, measurements are judged.** A speed-up is the median of
per-round ratios ``baseline time / trick time``; its spread is a distribution-free confidence
interval of that median (:func:`median_interval`); the verdict is decided from the interval
against one documented threshold, :data:`NOISE_THRESHOLD` (:func:`decide`):

======================  ==========================================================
``FASTER``              the whole interval is at or above ``NOISE_THRESHOLD``
``SLOWER``              the whole interval is at or below ``1 / NOISE_THRESHOLD``
``NO CLEAR DIFFERENCE`` anything else
======================  ==========================================================

Measured numbers are printed with a ``~`` prefix (:func:`fmt_measured`, :func:`fmt_time`) and
speed-ups without exponents (:func:`fmt_ratio`), so the repository's sanitize file masks
exactly them and the verdict words; :data:`VERDICT_LINE_RE` reads a printed verdict line back
(the results page). :class:`Measurement`, :class:`Comparison` and :class:`ManyComparison`
hold what was timed; :func:`table` prints comparisons side by side.
:mod:`tricks_helpers.bench.timing` does the timing; :mod:`tricks_helpers.bench` hands on the
names of both.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tricks_helpers._checks import check_number, check_type

__all__ = [
    "NOISE_THRESHOLD",
    "CONFIDENCE",
    "FASTER",
    "SLOWER",
    "NO_CLEAR_DIFFERENCE",
    "VERDICTS",
    "VERDICT_LINE_RE",
    "median_interval",
    "decide",
    "fmt_time",
    "fmt_measured",
    "fmt_ratio",
    "Measurement",
    "Comparison",
    "ManyComparison",
    "table",
]

#: The one noise threshold of the book. A trick is called FASTER only when the confidence
#: interval of its median speed-up lies entirely at or above it: on the shared 2-core machines
#: the book is executed on, run-to-run drifts of a few percent are common, so a gain under 10%
#: is not called a gain. Symmetrically, SLOWER needs the interval at or below 1 / threshold.
NOISE_THRESHOLD = 1.10

#: Target coverage of the interval of the median per-round ratio.
CONFIDENCE = 0.95

FASTER = "FASTER"
SLOWER = "SLOWER"
NO_CLEAR_DIFFERENCE = "NO CLEAR DIFFERENCE"
VERDICTS = (FASTER, SLOWER, NO_CLEAR_DIFFERENCE)

_RATIO = r"\d+(?:\.\d+)?"
#: Matches a verdict line printed by :meth:`Comparison.line` (for the results page).
VERDICT_LINE_RE = re.compile(
    rf"^(?P<verdict>{FASTER}|{SLOWER}|{NO_CLEAR_DIFFERENCE}) (?P<ratio>{_RATIO})x "
    rf"\[(?P<lo>{_RATIO})-(?P<hi>{_RATIO})\] (?P<label>.+) "
    r"\((?P<device>cpu|cuda), (?P<threads>\d+) threads?\)$"
)


def fmt_measured(value: float, digits: int = 3) -> str:
    """Format a measured number as ``~value`` (the sanitize file masks ``~<digits>``)."""
    return f"~{value:.{digits}g}"


def fmt_time(seconds: float) -> str:
    """Format a measured duration with a sensible unit, e.g. ``~1.23 ms``.

    Raises:
        ValueError: on a negative or non-finite duration.
    """
    seconds = check_number("fmt_time", "seconds", seconds, minimum=0.0)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{fmt_measured(seconds / scale)} {unit}"
    return f"{fmt_measured(seconds / 1e-9)} ns"


def fmt_ratio(ratio: float) -> str:
    """Format a speed-up without exponent notation: 2 decimals below 10, 1 below 1000, then 0.

    Raises:
        ValueError: for a ratio that is not a finite positive number (no time ratio is).
    """
    if not math.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"fmt_ratio: a speed-up is finite and positive, got {ratio!r}")
    if ratio < 10:
        return f"{ratio:.2f}"
    if ratio < 1000:
        return f"{ratio:.1f}"
    return f"{ratio:.0f}"


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


def decide(lo: float, hi: float, threshold: float = NOISE_THRESHOLD) -> str:
    """Verdict for a speed-up interval ``[lo, hi]`` against ``threshold`` (see the module doc).

    Raises:
        TypeError: on non-numbers.
        ValueError: on a non-positive bound, ``lo > hi`` or a threshold <= 1 (NaN included).
    """
    lo = check_number("decide", "lo", lo, minimum=0.0, strict_minimum=True, allow_inf=True)
    hi = check_number("decide", "hi", hi, minimum=0.0, strict_minimum=True, allow_inf=True)
    threshold = check_number("decide", "threshold", threshold, minimum=1.0, strict_minimum=True)
    if lo > hi:
        raise ValueError(f"decide: interval [{lo}, {hi}] has lo > hi")
    if lo >= threshold:
        return FASTER
    if hi <= 1 / threshold:
        return SLOWER
    return NO_CLEAR_DIFFERENCE


@dataclass(frozen=True)
class Measurement:
    """Seconds per call of one timed function: median over repeats, and spread."""

    times: tuple[float, ...]
    device: str

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def spread(self) -> float:
        """Half the inter-quartile range (0 with fewer than two repeats)."""
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return (q[2] - q[0]) / 2

    def per_second(self, items_per_call: float) -> float:
        """Throughput, e.g. samples/s, when each call processes ``items_per_call`` items."""
        return items_per_call / self.median

    def __str__(self) -> str:
        return f"{fmt_time(self.median)} (±{self.spread / self.median * 100:.2g}%)"


@dataclass(frozen=True)
class Comparison:
    """A baseline and a trick timed side by side, round by round, in one run."""

    label: str
    baseline: Measurement
    trick: Measurement
    ratios: tuple[float, ...]
    threads: int
    calls_per_round: int = 1
    checked: bool = False
    asserted: str = ""
    _rerun: Callable[[], Comparison] | None = field(default=None, repr=False, compare=False)

    @property
    def device(self) -> str:
        return self.baseline.device

    @property
    def ratio(self) -> float:
        """The speed-up: median of the per-round ratios ``baseline time / trick time``."""
        return statistics.median(self.ratios)

    @functools.cached_property
    def interval(self) -> tuple[float, float]:
        """Confidence interval of :attr:`ratio` (see :func:`median_interval`), computed once."""
        return median_interval(self.ratios)

    @property
    def threshold(self) -> float:
        return NOISE_THRESHOLD

    @property
    def verdict(self) -> str:
        return decide(*self.interval)

    def speedup_text(self) -> str:
        """``1.22x [1.15-1.31]``: the median ratio and its interval."""
        lo, hi = self.interval
        return f"{fmt_ratio(self.ratio)}x [{fmt_ratio(lo)}-{fmt_ratio(hi)}]"

    def line(self) -> str:
        """The verdict line: verdict first, then speed-up, interval, label and device."""
        return (
            f"{self.verdict} {self.speedup_text()} {self.label} "
            f"({self.device}, {self.threads} threads)"
        )

    def details(self) -> str:
        """The indented line under :meth:`line`: raw times, rounds, and what was checked."""
        calls = f" x {self.calls_per_round} calls" if self.calls_per_round > 1 else ""
        text = (
            f"  baseline {fmt_time(self.baseline.median)}, trick {fmt_time(self.trick.median)}"
            f"; {len(self.ratios)} rounds{calls}"
        )
        if self.checked:
            text += "; outputs checked equal"
        if self.asserted:
            text += f"; asserted {self.asserted}"
        return text

    def __str__(self) -> str:
        return f"{self.line()}\n{self.details()}"

    def remeasure(self) -> Comparison:
        """Measure again with the same functions and settings (silently)."""
        if self._rerun is None:
            raise ValueError(
                f"remeasure: {self.label!r} was not made by compare() and cannot be measured again"
            )
        return self._rerun()


def check_label(where: str, label: Any) -> str:
    check_type(where, "label", label, str)
    if not label.strip():
        raise ValueError(f"{where}: label must be a non-empty string")
    if "\n" in label:
        raise ValueError(f"{where}: label must be one line, got {label!r}")
    return label.strip()


@dataclass(frozen=True)
class ManyComparison:
    """Several candidates timed in the same rounds (see :func:`compare_many`)."""

    label: str
    times: dict[str, tuple[float, ...]]
    device: str
    threads: int
    calls_per_round: int = 1

    def measurement(self, name: str) -> Measurement:
        """The :class:`Measurement` of one candidate (seconds per call, over rounds)."""
        self._check_name(name)
        return Measurement(self.times[name], self.device)

    def _check_name(self, name: str) -> None:
        if name not in self.times:
            raise KeyError(
                f"{self.label!r} has no candidate {name!r}; candidates: {list(self.times)}"
            )

    def compare(
        self, label: str, pairs: Iterable[tuple[str, str]] | tuple[str, str], *, show: bool = True
    ) -> Comparison:
        """Pool the per-round ratios of one or more ``(baseline, trick)`` pairs into a verdict.

        Each pair contributes one ratio per round (both sides timed in the same round). The
        baseline and trick times of the returned comparison are those of the first pair.

        Raises:
            KeyError: on an unknown candidate name.
            ValueError: on an empty list of pairs.
        """
        label = check_label("ManyComparison.compare", label)
        if isinstance(pairs, tuple) and len(pairs) == 2 and all(isinstance(p, str) for p in pairs):
            pairs = [pairs]
        pairs = list(pairs)
        if not pairs:
            raise ValueError("ManyComparison.compare: no (baseline, trick) pairs given")
        ratios: list[float] = []
        for b, t in pairs:
            self._check_name(b)
            self._check_name(t)
            ratios += [bt / tt for bt, tt in zip(self.times[b], self.times[t])]
        b0, t0 = pairs[0]
        result = Comparison(
            label=label,
            baseline=self.measurement(b0),
            trick=self.measurement(t0),
            ratios=tuple(ratios),
            threads=self.threads,
            calls_per_round=self.calls_per_round,
        )
        if show:
            print(result)
        return result


def table(comparisons: Mapping[str, Comparison] | Iterable[Comparison]) -> str:
    """A fixed-layout text table of comparisons: what, baseline, trick, speed-up, verdict.

    Rows keep the given order; measured cells carry ``~`` and the speed-up its interval, so
    the sanitize file masks exactly those and the verdict words.
    """
    rows = (
        list(comparisons.items())
        if isinstance(comparisons, Mapping)
        else [(c.label, c) for c in comparisons]
    )
    for name, c in rows:
        check_type("table", f"row {name!r}", c, Comparison)
    head = ("what", "baseline", "trick", "speed-up [95% interval]", "verdict")
    body = [
        (name, fmt_time(c.baseline.median), fmt_time(c.trick.median), c.speedup_text(), c.verdict)
        for name, c in rows
    ]
    width = max(len(r[0]) for r in body + [head])
    lines = [f"{head[0]:<{width}}  {head[1]:>10}  {head[2]:>10}  {head[3]:<24} {head[4]}"]
    for name, b, t, s, v in body:
        lines.append(f"{name:<{width}}  {b:>10}  {t:>10}  {s:<24} {v}")
    return "\n".join(lines)
