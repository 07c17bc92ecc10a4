"""Measurements, comparisons, their verdicts and how they are printed (introduced in chapter 01).

The rule: **invariants are compared, measurements are judged.** A speed-up is the median of
per-round ratios ``baseline time / trick time``; its spread is a distribution-free confidence
interval of that median (:func:`median_interval`); the verdict is decided from the interval
against one documented threshold, :data:`NOISE_THRESHOLD` (:func:`decide`):

=============  =====================================================================
``FASTER``     the whole interval is at or above ``NOISE_THRESHOLD``
``SLOWER``     the whole interval is at or below ``1 / NOISE_THRESHOLD``
``SAME``       otherwise, the whole interval inside ``[1 / NOISE_THRESHOLD, NOISE_THRESHOLD]``
``UNDECIDED``  the interval straddles a threshold: this run decides nothing either way
=============  =====================================================================

Only a decided verdict (the first three) says anything: "costs nothing" needs ``SAME``, an
``UNDECIDED`` pair is printed as such with its interval (:func:`compare` may take more rounds
within a budget first, ``more_rounds=``). A why partner explains a verdict when the direction it
predicts is the one measured (:func:`explains`, :func:`explanation`: the one wording).

Measured numbers are printed with a ``~`` prefix (:func:`fmt_measured`, :func:`fmt_time`) and
speed-ups without exponents (:func:`fmt_ratio`), so the repository's sanitize file masks
exactly them and the verdict words; :data:`VERDICT_LINE_RE` reads a printed verdict line back
(the results page). What was timed, and how it prints, is
:mod:`tricks_helpers.bench.comparisons`; :mod:`tricks_helpers.bench.timing` and
:mod:`tricks_helpers.bench.pairs` do the timing; :mod:`tricks_helpers.bench` hands on the names
of all of them.
"""

from __future__ import annotations

import math
import re

from tricks_helpers._checks import check_number

__all__ = [
    "NOISE_THRESHOLD",
    "FASTER",
    "SLOWER",
    "SAME",
    "UNDECIDED",
    "VERDICTS",
    "DECIDED",
    "explains",
    "explanation",
    "VERDICT_LINE_RE",
    "decide",
    "fmt_time",
    "fmt_measured",
    "fmt_ratio",
]

#: The one noise threshold of the book. A trick is called FASTER only when the confidence
#: interval of its median speed-up lies entirely at or above it: on the shared 2-core machines
#: the book is executed on, run-to-run drifts of a few percent are common, so a gain under 10%
#: is not called a gain. Symmetrically, SLOWER needs the interval at or below 1 / threshold.
NOISE_THRESHOLD = 1.10

FASTER = "FASTER"
SLOWER = "SLOWER"
SAME = "SAME"
UNDECIDED = "UNDECIDED"
VERDICTS = (FASTER, SLOWER, SAME, UNDECIDED)
DECIDED = (FASTER, SLOWER, SAME)
"""The verdicts that decide something (a claim is HELD or NOT HELD only on one of them)."""

_RATIO = r"\d+(?:\.\d+)?"
#: Matches a verdict line printed by :meth:`Comparison.line` (for the results page).
VERDICT_LINE_RE = re.compile(
    rf"^(?P<verdict>{'|'.join(VERDICTS)}) (?P<ratio>{_RATIO})x "
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
    if lo >= 1 / threshold and hi <= threshold:
        return SAME
    return UNDECIDED


def explains(predicts: str, verdict: str) -> bool | None:
    """Whether a why partner that predicts ``predicts`` explains a measured ``verdict``.

    A partner (an invariant counted beside the timing: bytes, FLOPs, copies) predicts a
    direction: FASTER (the trick does less work), SLOWER (it does more) or SAME (equal work).
    It explains the verdict when that direction is the one measured.

    Returns:
        True or False for a decided verdict; None for UNDECIDED (nothing to explain).

    Raises:
        ValueError: on a prediction not in :data:`DECIDED` or a verdict not in :data:`VERDICTS`.
    """
    if predicts not in DECIDED:
        raise ValueError(f"explains: predicts must be one of {DECIDED}, got {predicts!r}")
    if verdict not in VERDICTS:
        raise ValueError(f"explains: verdict must be one of {VERDICTS}, got {verdict!r}")
    if verdict == UNDECIDED:
        return None
    return predicts == verdict


def explanation(predicts: str, verdict: str) -> str:
    """The one wording of :func:`explains`, printed after a partner (every chapter uses it):
    ``(explains this verdict)``, ``(does not explain this verdict: predicts FASTER, measured
    SLOWER)`` or ``(explains nothing yet: the verdict is UNDECIDED)``. It depends on a measured
    verdict, so the sanitize file removes it before comparing.
    """
    said = explains(predicts, verdict)
    if said is None:
        return "(explains nothing yet: the verdict is UNDECIDED)"
    if said:
        return "(explains this verdict)"
    return f"(does not explain this verdict: predicts {predicts}, measured {verdict})"
