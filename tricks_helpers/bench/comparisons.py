"""What a timing holds and how it prints: measurements, comparisons and their lines (chapter 01).

:class:`Measurement` is the seconds per call of one timed function; :class:`Comparison` a
baseline and a trick timed side by side, round by round, with the verdict of its interval
(:func:`~tricks_helpers.bench.verdicts.decide`) and its two printed lines; every printed
interval carries its true coverage, computed from its round count
(:mod:`tricks_helpers.bench.intervals`): the details line says ``5 rounds, 93% interval`` and
the summary table has ``rounds`` and ``covers`` columns. :class:`ManyComparison` holds several
candidates timed in the same rounds; :meth:`ManyComparison.compare` takes exactly one pair (no
verdict pools different things). :mod:`tricks_helpers.bench.tables` prints several side by side
(``table``) and :mod:`tricks_helpers.bench.summaries` counts their verdicts (``tally``).
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tricks_helpers._checks import check_type
from tricks_helpers.bench.intervals import (
    coverage_percent,
    interval_coverage,
    median_interval,
)
from tricks_helpers.bench.records import emit, make_record
from tricks_helpers.bench.verdicts import (
    DECIDED,
    FASTER,
    NOISE_THRESHOLD,
    decide,
    explanation,
    fmt_ratio,
    fmt_time,
)
from tricks_helpers.fields import RECORD, check_text

__all__ = ["Measurement", "Comparison", "ManyComparison"]


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
    why: str = ""  # the invariant partner: why the trick is faster (records only, not printed)
    predicts: str = FASTER  # the direction the partner predicts (see explains())
    adaptive: bool = False  # rounds may be added while UNDECIDED: the round count is measured
    _rerun: Callable[[], Comparison] | None = field(default=None, repr=False, compare=False)

    @property
    def device(self) -> str:
        return self.baseline.device

    @property
    def ratio(self) -> float:
        """The speed-up: median of the per-round ratios ``baseline time / trick time``."""
        return statistics.median(self.ratios)

    def __post_init__(self) -> None:
        if self.predicts not in DECIDED:
            raise ValueError(
                f"Comparison: predicts must be one of {DECIDED}, got {self.predicts!r}"
            )

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

    @property
    def rounds(self) -> int:
        """How many per-round ratios the interval is made of."""
        return len(self.ratios)

    @property
    def coverage(self) -> float:
        """The exact coverage of :attr:`interval` for :attr:`rounds` values (see
        :func:`~tricks_helpers.bench.intervals.interval_coverage`): 0.9375 at 5 rounds."""
        return interval_coverage(self.rounds)

    def coverage_text(self) -> str:
        """``93% interval``: the coverage in whole percent, rounded down (never more than
        it has); deterministic given the rounds, so nbval compares it as text. Where rounds
        may be added while UNDECIDED (:attr:`adaptive`) the count is a measurement: ``~99%``."""
        mark = "~" if self.adaptive else ""
        return f"{mark}{coverage_percent(self.rounds)}% interval"

    def rounds_text(self) -> str:
        """The round count as printed: ``5``, or ``~9`` where rounds may be added."""
        return f"~{self.rounds}" if self.adaptive else str(self.rounds)

    def explained(self) -> str:
        """:func:`explanation` of this comparison's partner against its verdict."""
        return explanation(self.predicts, self.verdict)

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
            f"; {self.rounds_text()} rounds{calls}, {self.coverage_text()}"
        )
        if self.checked:
            text += "; outputs checked equal"
        if self.asserted:
            text += f"; asserted {self.asserted}"
        return text

    def __str__(self) -> str:
        return f"{self.line()}\n{self.details()}"

    def record(self, chapter: str | None = None) -> dict:
        """This comparison as a plain dict (see :mod:`tricks_helpers.bench.records`)."""
        return make_record(self, chapter=chapter)

    def show(self) -> None:
        """Print the two lines; append the record where ``TRICKS_RECORDS`` names a file."""
        print(self)
        emit(self.record())

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
    return check_text(where, "label", label.strip(), RECORD["label"])  # the record's limits


def check_why(where: str, why: Any) -> str:
    check_type(where, "why", why, str)
    if "\n" in why:
        raise ValueError(f"{where}: why must be one line, got {why!r}")
    return why.strip()


def check_predicts(where: str, predicts: Any) -> str:
    check_type(where, "predicts", predicts, str)
    if predicts not in DECIDED:
        raise ValueError(f"{where}: predicts must be one of {DECIDED}, got {predicts!r}")
    return predicts


@dataclass(frozen=True)
class ManyComparison:
    """Several candidates timed in the same rounds (see :func:`compare_many`)."""

    label: str
    times: dict[str, tuple[float, ...]]
    device: str
    threads: int
    calls_per_round: int = 1
    adaptive: bool = False  # rounds were added while a settled pair was UNDECIDED (compare_many)

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
        self,
        label: str,
        pair: tuple[str, str],
        *,
        show: bool = True,
        why: str = "",
        predicts: str = FASTER,
    ) -> Comparison:
        """The verdict of one ``(baseline, trick)`` pair, from its per-round ratios.

        Exactly one pair: ratios of different pairs (five formats, say) are ratios of different
        things, and one interval over them hides the pair that differs (issue 19). Compare each
        pair on its own and count the verdicts with :func:`tally`. ``why`` is the invariant
        partner, kept in the record (:meth:`Comparison.record`), not printed; ``predicts`` the
        direction it predicts (:func:`explains`).

        Raises:
            TypeError: when ``pair`` is not a tuple of two names (a list of pairs included).
            KeyError: on an unknown candidate name.
        """
        label = check_label("ManyComparison.compare", label)
        if not (
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise TypeError(
                "ManyComparison.compare: pair must be one (baseline, trick) tuple of names, got "
                f"{pair!r}; pooling different pairs into one verdict is refused: compare each"
            )
        b, t = pair
        self._check_name(b)
        self._check_name(t)
        result = Comparison(
            label=label,
            baseline=self.measurement(b),
            trick=self.measurement(t),
            ratios=tuple(bt / tt for bt, tt in zip(self.times[b], self.times[t])),
            threads=self.threads,
            calls_per_round=self.calls_per_round,
            why=check_why("ManyComparison.compare", why),
            predicts=check_predicts("ManyComparison.compare", predicts),
            adaptive=self.adaptive,
        )
        if show:
            result.show()
        return result
