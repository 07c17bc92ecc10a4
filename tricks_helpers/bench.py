"""Timing, side-by-side comparisons and their verdicts (introduced in chapter 01).

The book's rule: **invariants are compared, measurements are judged.** A speed verdict is
itself a measurement: it is shown with its spread and decided by code, but never compared as
text by nbval (the repository's sanitize file masks verdict words and measured digits).

Guarantees:

- every timed call is preceded by warm-up calls, and on CUDA by ``torch.cuda.synchronize()``
  before the clock starts and before it stops;
- :func:`compare` and :func:`compare_many` interleave the candidates round by round (in a new
  seeded random order each round for :func:`compare_many`), so slow drifts of the machine hit
  all of them alike; the speed-up is the **median of the per-round ratios**
  ``baseline time / trick time``;
- its spread is a distribution-free confidence interval of that median (order statistics of
  the per-round ratios, :func:`median_interval`); the verdict is decided from the interval
  against one documented threshold, :data:`NOISE_THRESHOLD`:

  ======================  ==========================================================
  ``FASTER``              the whole interval is at or above ``NOISE_THRESHOLD``
  ``SLOWER``              the whole interval is at or below ``1 / NOISE_THRESHOLD``
  ``NO CLEAR DIFFERENCE`` anything else
  ======================  ==========================================================

- the verdict comes first on a short line, e.g.
  ``FASTER 1.22x [1.15-1.31] conv+BN fusion, batch 1 (cpu, 2 threads)``, followed by an
  indented line with the raw times (``~`` marks a measured value);
- robust, large effects can be asserted with loose physical bounds (``at_least=`` /
  ``at_most=`` of :func:`compare`): the comparison is re-measured up to ``attempts`` times and
  fails only when no attempt reaches the bound.
"""

from __future__ import annotations

import math
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable

import torch

from tricks_helpers._checks import check_callable, check_int, check_number, check_type

__all__ = [
    "NOISE_THRESHOLD", "CONFIDENCE", "FASTER", "SLOWER", "NO_CLEAR_DIFFERENCE", "VERDICTS",
    "VERDICT_LINE_RE", "Measurement", "Comparison", "ManyComparison", "measure", "compare",
    "compare_many", "comparison_from_times", "median_interval", "decide", "device_class",
    "fmt_time", "fmt_measured", "fmt_ratio", "table",
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
    r"\((?P<device>cpu|cuda), (?P<threads>\d+) threads?\)$")

_DEVICE_TYPES = ("cpu", "cuda")


def device_class(device: str | torch.device | None = None) -> str:
    """Return ``"cuda"`` or ``"cpu"`` for ``device`` (default: CUDA when available).

    Raises:
        ValueError: for another device type (``"mps"``, ``"meta"``...).
    """
    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    kind = torch.device(device).type
    if kind not in _DEVICE_TYPES:
        raise ValueError(f"device_class: unsupported device type {kind!r}; expected one of "
                         f"{list(_DEVICE_TYPES)}")
    return kind


def _check_counts(where: str, repeats: int, number: int, warmup: int) -> None:
    check_int(where, "repeats", repeats, minimum=1)
    check_int(where, "number", number, minimum=1)
    check_int(where, "warmup", warmup, minimum=0)


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
    """Format a speed-up without exponent notation: 2 decimals below 10, 1 below 1000, then 0."""
    if ratio < 10:
        return f"{ratio:.2f}"
    if ratio < 1000:
        return f"{ratio:.1f}"
    return f"{ratio:.0f}"


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


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time_once(fn: Callable[[], Any], number: int, device: str) -> float:
    _sync(device)
    start = time.perf_counter()
    for _ in range(number):
        fn()
    _sync(device)
    return (time.perf_counter() - start) / number


def measure(fn: Callable[[], Any], *, repeats: int = 7, number: int = 1, warmup: int = 2,
            device: str | torch.device | None = None) -> Measurement:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` timings of ``number`` calls each.

    Args:
        fn: a function of no arguments (wrap arguments with a lambda or ``functools.partial``).
        repeats: timed repeats; the median and spread are taken over them.
        number: calls per repeat (raise it for very short functions).
        warmup: untimed calls first (allocator, caches, lazy init, compilation).
        device: where ``fn`` runs; on CUDA the clock waits for the GPU to finish.

    Returns:
        A :class:`Measurement` of seconds per call.

    Raises:
        TypeError: on a non-callable ``fn`` or non-integer counts.
        ValueError: on counts out of range.
    """
    check_callable("measure", "fn", fn)
    _check_counts("measure", repeats, number, warmup)
    dev = device_class(device)
    for _ in range(warmup):
        fn()
    _sync(dev)
    return Measurement(tuple(_time_once(fn, number, dev) for _ in range(repeats)), dev)


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Distribution-free confidence interval of the median of ``values``.

    Uses order statistics: ``[x_(k), x_(n+1-k)]`` with the largest ``k`` whose coverage
    ``1 - 2 P(Binomial(n, 1/2) <= k - 1)`` is at least ``confidence``. With fewer than 6
    values no such ``k`` exists for 95%, and the full range ``[min, max]`` is returned (its
    coverage is ``1 - 2**(1 - n)``: 94% for 5 values).

    Raises:
        ValueError: on an empty sequence or a confidence outside ``(0, 1)``.
    """
    if len(values) == 0:
        raise ValueError("median_interval: no values")
    check_number("median_interval", "confidence", confidence, minimum=0.0, maximum=1.0,
                 strict_minimum=True)
    xs = sorted(values)
    n = len(xs)
    k = 1
    while k < n // 2 and 1 - 2 * _binom_cdf(k, n) >= confidence:
        k += 1
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
    _rerun: Callable[[], "Comparison"] | None = field(default=None, repr=False, compare=False)

    @property
    def device(self) -> str:
        return self.baseline.device

    @property
    def ratio(self) -> float:
        """The speed-up: median of the per-round ratios ``baseline time / trick time``."""
        return statistics.median(self.ratios)

    @property
    def interval(self) -> tuple[float, float]:
        """Confidence interval of :attr:`ratio` (see :func:`median_interval`)."""
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
        return (f"{self.verdict} {self.speedup_text()} {self.label} "
                f"({self.device}, {self.threads} threads)")

    def details(self) -> str:
        """The indented line under :meth:`line`: raw times, rounds, and what was checked."""
        calls = f" x {self.calls_per_round} calls" if self.calls_per_round > 1 else ""
        text = (f"  baseline {fmt_time(self.baseline.median)}, trick {fmt_time(self.trick.median)}"
                f"; {len(self.ratios)} rounds{calls}")
        if self.checked:
            text += "; outputs checked equal"
        if self.asserted:
            text += f"; asserted {self.asserted}"
        return text

    def __str__(self) -> str:
        return f"{self.line()}\n{self.details()}"

    def remeasure(self) -> "Comparison":
        """Measure again with the same functions and settings (silently)."""
        if self._rerun is None:
            raise ValueError(f"remeasure: {self.label!r} was not made by compare() and cannot "
                             f"be measured again")
        return self._rerun()


def _check_label(where: str, label: Any) -> str:
    check_type(where, "label", label, str)
    if not label.strip():
        raise ValueError(f"{where}: label must be a non-empty string")
    if "\n" in label:
        raise ValueError(f"{where}: label must be one line, got {label!r}")
    return label.strip()


def _check_outputs(label: str, a: Any, b: Any, check: bool | Callable[[Any, Any], Any]) -> None:
    try:
        if check is True:
            torch.testing.assert_close(b, a)
        else:
            check(a, b)
    except AssertionError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise AssertionError(f"compare: {label!r}: baseline and trick do not compute the same "
                             f"thing, so timing them side by side means nothing: {first}") from err


def _bound_text(at_least: float | None, at_most: float | None) -> str:
    parts = []
    if at_least is not None:
        parts.append(f"speed-up >= {at_least:g}x")
    if at_most is not None:
        parts.append(f"speed-up <= {at_most:g}x")
    return " and ".join(parts)


def compare(label: str, baseline: Callable[[], Any], trick: Callable[[], Any], *,
            repeats: int = 15, number: int = 1, warmup: int = 2,
            device: str | torch.device | None = None,
            check: bool | Callable[[Any, Any], Any] = False,
            at_least: float | None = None, at_most: float | None = None, attempts: int = 3,
            show: bool = True) -> Comparison:
    """Time ``baseline`` and ``trick`` side by side and decide a verdict.

    Rounds alternate baseline and trick (which goes first alternates too); the speed-up is
    the median over rounds of ``baseline time / trick time``, with the interval of
    :func:`median_interval`, and the verdict of :func:`decide`.

    Args:
        label: what is compared, e.g. ``"conv+BN fusion, batch 1"``; keep it short (the line
            should stay under 100 characters).
        baseline, trick: functions of no arguments doing the same work two ways.
        repeats: rounds (>= 1; 6 or more give a 95% interval).
        number: calls of each function per round.
        warmup: untimed calls of each first.
        device: where they run (default: CUDA when available, else CPU).
        check: compare the outputs of one call of each before timing, as the PyTorch
            benchmark recipe does: ``True`` uses ``torch.testing.assert_close``; a callable
            ``check(baseline_out, trick_out)`` must raise ``AssertionError`` on a mismatch.
        at_least, at_most: loose physical bounds on the median speed-up, asserted. When the
            bound is missed the whole comparison is measured again, up to ``attempts`` times
            in all; only the last comparison is printed.
        attempts: measurements allowed to reach the bounds (>= 1).
        show: print the verdict line and the details line.

    Returns:
        A :class:`Comparison`; ``.verdict`` is one of :data:`VERDICTS`.

    Raises:
        TypeError: on a non-string label, non-callables or non-integer counts.
        ValueError: on an empty label, counts out of range, or bounds that are not positive.
        AssertionError: when ``check`` finds different outputs, or no attempt reaches the bounds.
    """
    label = _check_label("compare", label)
    check_callable("compare", "baseline", baseline)
    check_callable("compare", "trick", trick)
    _check_counts("compare", repeats, number, warmup)
    check_int("compare", "attempts", attempts, minimum=1)
    if not (check is True or check is False or callable(check)):
        raise TypeError(f"compare: check must be True, False or a callable, got {check!r}")
    for name, bound in (("at_least", at_least), ("at_most", at_most)):
        if bound is not None:
            check_number("compare", name, bound, minimum=0.0, strict_minimum=True)
    dev = device_class(device)
    if check is not False:
        _check_outputs(label, baseline(), trick(), check)
    asserted = _bound_text(at_least, at_most)

    def run() -> Comparison:
        for _ in range(warmup):
            baseline()
            trick()
        base_t, trick_t, ratios = [], [], []
        for i in range(repeats):
            if i % 2 == 0:
                b = _time_once(baseline, number, dev)
                t = _time_once(trick, number, dev)
            else:
                t = _time_once(trick, number, dev)
                b = _time_once(baseline, number, dev)
            base_t.append(b)
            trick_t.append(t)
            ratios.append(b / t if t > 0 else math.inf)
        return Comparison(label=label, baseline=Measurement(tuple(base_t), dev),
                          trick=Measurement(tuple(trick_t), dev), ratios=tuple(ratios),
                          threads=torch.get_num_threads(), calls_per_round=number,
                          checked=check is not False, asserted=asserted, _rerun=run)

    result = run()
    tries = [result]
    while not _within(result.ratio, at_least, at_most) and len(tries) < attempts:
        result = run()
        tries.append(result)
    if show:
        print(result)
    if not _within(result.ratio, at_least, at_most):
        seen = ", ".join(f"{fmt_ratio(c.ratio)}x" for c in tries)
        raise AssertionError(f"compare: {label!r}: expected {asserted}, measured {seen} in "
                             f"{len(tries)} attempt(s)")
    return result


def _within(ratio: float, at_least: float | None, at_most: float | None) -> bool:
    return (at_least is None or ratio >= at_least) and (at_most is None or ratio <= at_most)


def comparison_from_times(label: str, baseline_times: Sequence[float],
                          trick_times: Sequence[float], *, device: str = "cpu",
                          threads: int | None = None, show: bool = True) -> Comparison:
    """A :class:`Comparison` from times measured elsewhere, paired round by round.

    For timings that :func:`compare` cannot take itself, e.g. per-epoch times reported by
    worker processes (chapter 08). Round ``i`` pairs ``baseline_times[i]`` with
    ``trick_times[i]``; pair them so that both sides of a round ran under similar conditions.

    Raises:
        ValueError: on empty or unequal sequences, or a non-positive time.
    """
    label = _check_label("comparison_from_times", label)
    if len(baseline_times) == 0 or len(baseline_times) != len(trick_times):
        raise ValueError(f"comparison_from_times: need two non-empty sequences of equal length, "
                         f"got {len(baseline_times)} and {len(trick_times)}")
    for name, seq in (("baseline_times", baseline_times), ("trick_times", trick_times)):
        for t in seq:
            check_number("comparison_from_times", name, t, minimum=0.0, strict_minimum=True)
    dev = device_class(device)
    result = Comparison(label=label, baseline=Measurement(tuple(baseline_times), dev),
                        trick=Measurement(tuple(trick_times), dev),
                        ratios=tuple(b / t for b, t in zip(baseline_times, trick_times)),
                        threads=torch.get_num_threads() if threads is None else threads)
    if show:
        print(result)
    return result


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
            raise KeyError(f"{self.label!r} has no candidate {name!r}; candidates: {list(self.times)}")

    def compare(self, label: str, pairs: Iterable[tuple[str, str]] | tuple[str, str], *,
                show: bool = True) -> Comparison:
        """Pool the per-round ratios of one or more ``(baseline, trick)`` pairs into a verdict.

        Each pair contributes one ratio per round (both sides timed in the same round). The
        baseline and trick times of the returned comparison are those of the first pair.

        Raises:
            KeyError: on an unknown candidate name.
            ValueError: on an empty list of pairs.
        """
        label = _check_label("ManyComparison.compare", label)
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
        result = Comparison(label=label, baseline=self.measurement(b0),
                            trick=self.measurement(t0), ratios=tuple(ratios),
                            threads=self.threads, calls_per_round=self.calls_per_round)
        if show:
            print(result)
        return result


def compare_many(label: str, candidates: Mapping[str, Callable[[], Any]], *, rounds: int = 5,
                 number: int = 1, warmup: int = 1, device: str | torch.device | None = None,
                 seed: int = 0) -> ManyComparison:
    """Time several candidates in the same rounds, each round in a new seeded random order.

    Use :meth:`ManyComparison.compare` to turn pairs of candidates into verdicts, and
    :meth:`ManyComparison.measurement` for per-candidate times (e.g. a throughput table).

    Args:
        label: what is measured (used in error messages).
        candidates: name -> function of no arguments (at least two).
        rounds: rounds; every candidate is timed once per round.
        number: calls per timing.
        warmup: untimed calls of every candidate before the first round.
        device: where they run.
        seed: seed of the visiting order (the global RNGs are not touched).

    Raises:
        TypeError: on non-callables or non-integer counts.
        ValueError: on fewer than two candidates or counts out of range.
    """
    label = _check_label("compare_many", label)
    check_type("compare_many", "candidates", candidates, Mapping)
    if len(candidates) < 2:
        raise ValueError(f"compare_many: need at least two candidates, got {len(candidates)}")
    for name, fn in candidates.items():
        check_callable("compare_many", f"candidates[{name!r}]", fn)
    _check_counts("compare_many", rounds, number, warmup)
    check_int("compare_many", "seed", seed, minimum=0)
    dev = device_class(device)
    names = list(candidates)
    for name in names:
        for _ in range(warmup):
            candidates[name]()
    times: dict[str, list[float]] = {n: [] for n in names}
    order_rng = random.Random(seed)
    for _ in range(rounds):
        visit = names[:]
        order_rng.shuffle(visit)
        for name in visit:
            times[name].append(_time_once(candidates[name], number, dev))
    return ManyComparison(label=label, times={n: tuple(t) for n, t in times.items()},
                          device=dev, threads=torch.get_num_threads(), calls_per_round=number)


def table(comparisons: Mapping[str, Comparison] | Iterable[Comparison]) -> str:
    """A fixed-layout text table of comparisons: what, baseline, trick, speed-up, verdict.

    Rows keep the given order; measured cells carry ``~`` and the speed-up its interval, so
    the sanitize file masks exactly those and the verdict words.
    """
    rows = list(comparisons.items()) if isinstance(comparisons, Mapping) else [
        (c.label, c) for c in comparisons]
    for name, c in rows:
        check_type("table", f"row {name!r}", c, Comparison)
    head = ("what", "baseline", "trick", "speed-up [95% interval]", "verdict")
    body = [(name, fmt_time(c.baseline.median), fmt_time(c.trick.median), c.speedup_text(),
             c.verdict) for name, c in rows]
    width = max(len(r[0]) for r in body + [head])
    lines = [f"{head[0]:<{width}}  {head[1]:>10}  {head[2]:>10}  {head[3]:<24} {head[4]}"]
    for name, b, t, s, v in body:
        lines.append(f"{name:<{width}}  {b:>10}  {t:>10}  {s:<24} {v}")
    return "\n".join(lines)
