"""What decides a claim: this run's verdicts, a counted fact, a measured trend, an absent condition.

:func:`from_verdicts` decides a speed claim from comparisons (one verdict per pair, never
pooled), :func:`from_count` from an invariant, :func:`from_trend` from a trend of verdicts,
:func:`not_decided` where the condition is absent and nothing of the case was timed.
:class:`Count`, :class:`Trend` and :class:`Absent` are what a chapter hands
:meth:`~tricks_helpers.claims.Claims.record` beside its evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tricks_helpers._checks import check_bool, check_choice, check_type
from tricks_helpers.bench.comparisons import Comparison
from tricks_helpers.bench.verdicts import FASTER, NOISE_THRESHOLD, SAME, SLOWER
from tricks_helpers.bench.verdicts import UNDECIDED as _UNDECIDED_VERDICT
from tricks_helpers.claims.claim import HELD, NOT_DECIDED, NOT_HELD, UNDECIDED, Claim
from tricks_helpers.fields import CLAIM, one_line

__all__ = [
    "NOT_SLOWER",
    "EXPECTATIONS",
    "Count",
    "Trend",
    "Absent",
    "from_verdicts",
    "from_count",
    "from_trend",
    "not_decided",
]

NOT_SLOWER = "not SLOWER"
"""The expectation of advice that a trick costs no time ("costs no time", "not slower than"):
met where the whole interval lies at or above ``1 / NOISE_THRESHOLD`` (SAME or FASTER: decidedly
not slower), missed on SLOWER, UNDECIDED where the interval reaches below ``1 / NOISE_THRESHOLD``
without lying wholly there. Advice that the speed does not change ("changes no speed")
expects SAME, which a FASTER verdict misses."""

EXPECTATIONS = (FASTER, SLOWER, SAME, NOT_SLOWER)


def _measured(evidence: str) -> str:
    """A measured claim's evidence (verdicts with their intervals: its length varies with the
    run's digits) as one line, cut with ``...`` at the results file's bound, never refused."""
    return one_line(evidence, CLAIM["evidence"].max_length)


def _verdict_text(c: Comparison) -> str:
    return f"{c.verdict} {c.speedup_text()} {c.label}"


def _listed(items: list[Comparison]) -> str:
    shown = "; ".join(_verdict_text(c) for c in items[:2])
    return shown + (f" (+{len(items) - 2} more)" if len(items) > 2 else "")


def _meets(c: Comparison, expect: str) -> bool | None:
    """Whether ``c`` meets ``expect``: True, False, or None where its interval decides nothing."""
    if expect == NOT_SLOWER:
        lo, hi = c.interval
        floor = 1 / NOISE_THRESHOLD
        return True if lo >= floor else False if hi <= floor else None
    return None if c.verdict == _UNDECIDED_VERDICT else c.verdict == expect


def not_decided(key: str, advice: str, *, condition: str, missing: str, outside: str = "") -> Claim:
    """A claim whose condition is absent on this machine and whose case the page did not time.

    Args:
        missing: what this machine lacks, in words (``"no CUDA device"``).
        outside: where the page *did* time the case without the condition, the key of the
            claim that decides that outcome (it must be in the same table); the evidence line
            names it.
    """
    check_type("not_decided", "missing", missing, str)
    check_type("not_decided", "outside", outside, str)
    evidence = f"{missing}; measured here without it: claim {outside}" if outside else missing
    return Claim(key, advice, condition, NOT_DECIDED, evidence, measured=False, outside=outside)


def from_verdicts(
    key: str,
    advice: str,
    comparisons: Iterable[Comparison] | Mapping[object, Comparison],
    *,
    expect: str = FASTER,
    condition: str = "any CPU",
    condition_holds: bool = True,
    missing: str = "",
    outside: str = "",
) -> Claim:
    """Decide a speed claim from this run's verdicts, one verdict per (baseline, trick) pair.

    Only a decided verdict decides: the claim is :data:`NOT_HELD` when any comparison's verdict
    is decided (FASTER, SLOWER, SAME) and differs from ``expect`` (the evidence names them);
    else :data:`UNDECIDED` when any is UNDECIDED (named with its interval); else :data:`HELD`.
    Verdicts are never pooled: each pair is judged on its own interval. "Changes no speed"
    expects SAME; "costs no time" expects :data:`NOT_SLOWER`, decided from the interval.

    Args:
        comparisons: the deciding :class:`~tricks_helpers.bench.Comparison` objects (a dict's
            values are used).
        expect: the verdict the advice predicts for every comparison (one of
            :data:`EXPECTATIONS`).
        condition: where the advice is meant to hold.
        condition_holds: False when this machine lacks the condition. These comparisons then
            timed the case *without* it: that outcome must be its own claim, named by
            ``outside``; this one is :data:`NOT_DECIDED` and says where the outcome went.
        missing: with ``condition_holds=False``, what is missing (required then).
        outside: with ``condition_holds=False``, the key of the claim deciding what was
            measured here (required then).

    Raises:
        TypeError: when a comparison is not a Comparison.
        ValueError: on no comparisons, an unknown ``expect``, or with ``condition_holds=False``
            a missing ``missing`` or ``outside``.
    """
    check_choice("from_verdicts", "expect", expect, EXPECTATIONS)
    check_bool("from_verdicts", "condition_holds", condition_holds)
    found = list(comparisons.values() if isinstance(comparisons, Mapping) else comparisons)
    if not found:
        raise ValueError(f"from_verdicts: claim {key!r} needs at least one comparison")
    for c in found:
        check_type("from_verdicts", "comparison", c, Comparison)
    if not condition_holds:
        if not missing:
            raise ValueError(
                f"from_verdicts: claim {key!r} has condition_holds=False: say what is `missing`"
            )
        if not outside:
            raise ValueError(
                f"from_verdicts: claim {key!r}: the condition is absent but {len(found)} "
                f"comparison(s) timed the case here ({_listed(found)}); decide that outcome as "
                "its own claim and name it with outside=, or use not_decided() where nothing "
                "of the case was timed"
            )
        return not_decided(key, advice, condition=condition, missing=missing, outside=outside)
    if outside:
        raise ValueError(f"from_verdicts: claim {key!r}: outside= only with condition_holds=False")
    met = {id(c): _meets(c, expect) for c in found}
    misses = [c for c in found if met[id(c)] is False]
    if misses:
        missed = SLOWER if expect == NOT_SLOWER else f"not {expect}"
        evidence = f"{len(misses)} of {len(found)} {missed}: {_listed(misses)}"
        return Claim(key, advice, condition, NOT_HELD, _measured(evidence), measured=True)
    open_ = [c for c in found if met[id(c)] is None]
    if open_:
        evidence = f"{len(open_)} of {len(found)} UNDECIDED, expected {expect}: {_listed(open_)}"
        return Claim(key, advice, condition, UNDECIDED, _measured(evidence), measured=True)
    if len(found) == 1:
        evidence = _verdict_text(found[0])
        if expect == NOT_SLOWER and found[0].verdict not in (SAME, FASTER):
            # UNDECIDED about a gain, yet its whole interval lies at or above 1/1.1
            evidence = f"not SLOWER (interval >= {1 / NOISE_THRESHOLD:.2f}): {evidence}"
    else:
        evidence = f"{len(found)} of {len(found)} {expect}"
    return Claim(key, advice, condition, HELD, _measured(evidence), measured=True)


def from_count(
    key: str,
    advice: str,
    holds: bool,
    evidence: str,
    *,
    condition: str = "any machine",
) -> Claim:
    """Decide a claim from a counted fact (bytes, FLOPs, op counts, equal streams).

    The evidence is compared by nbval, so it names only device-independent facts.

    Args:
        holds: whether the counted fact agrees with the advice.
        evidence: the count, in words (``"weight bytes 0.25x float32's"``).
    """
    check_bool("from_count", "holds", holds)
    return Claim(key, advice, condition, HELD if holds else NOT_HELD, evidence, measured=False)


def from_trend(
    key: str,
    advice: str,
    holds: bool,
    evidence: str,
    *,
    condition: str = "any CPU",
) -> Claim:
    """Decide a claim from a measured trend that no single verdict is (``the gain grows with
    the width``): a measurement, so its status and evidence are masked like a verdict's.

    Args:
        holds: whether the trend agrees with the advice; None when this run's verdicts do
            not decide the trend (an UNDECIDED verdict among them): the claim is UNDECIDED.
        evidence: the verdicts the trend was read from, with their intervals. It is measured
            text whose length varies from run to run (digits, interval widths): made one line
            and cut with ``...`` at the results file's bound, so a long run never fails here.
    """
    if holds is not None:
        check_bool("from_trend", "holds", holds)
    check_type("from_trend", "evidence", evidence, str)
    status = UNDECIDED if holds is None else (HELD if holds else NOT_HELD)
    return Claim(key, advice, condition, status, _measured(evidence), measured=True)


@dataclass(frozen=True)
class Count:
    """What decides a claim declared with :meth:`Claims.record`: a counted fact (an
    invariant; see :func:`from_count`)."""

    holds: bool
    evidence: str


@dataclass(frozen=True)
class Trend:
    """What decides a claim declared with :meth:`Claims.record`: a measured trend (see
    :func:`from_trend`); ``holds=None`` when this run's verdicts do not decide it."""

    holds: bool | None
    evidence: str


@dataclass(frozen=True)
class Absent:
    """What decides a claim declared with :meth:`Claims.record`: nothing, the condition is
    absent here and the page timed nothing of the case (see :func:`not_decided`)."""

    missing: str
    outside: str = ""
