"""A baseline and a trick timed side by side, round by round, and judged (chapter 01).

:func:`compare` checks that both compute the same thing, alternates them round by round (which
goes first alternates too), may add rounds while the verdict is UNDECIDED, asserts loose
physical bounds re-measured before failing, and returns a
:class:`~tricks_helpers.bench.comparisons.Comparison`. Use it through the face:
``from tricks_helpers import bench``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tricks_helpers._checks import check_callable, check_int, check_number
from tricks_helpers.bench.clock import check_counts, device_class, time_once
from tricks_helpers.bench.comparisons import (
    Comparison,
    Measurement,
    check_label,
    check_predicts,
    check_why,
)
from tricks_helpers.bench.verdicts import FASTER, UNDECIDED, fmt_ratio

__all__ = ["compare"]


def _check_result(label: str, result: Any) -> bool:
    """Whether a check callable's return value says "same": ``None`` and ``True`` do."""
    if result is None:
        return True
    if isinstance(result, torch.Tensor):
        if result.numel() != 1 or result.dtype != torch.bool:
            raise TypeError(
                f"compare: {label!r}: check returned a {tuple(result.shape)} {result.dtype} "
                f"tensor; return a bool or a one-element bool tensor (torch.equal, "
                f"torch.allclose), or raise AssertionError"
            )
        return bool(result.item())
    if isinstance(result, (bool, np.bool_)):
        return bool(result)
    raise TypeError(
        f"compare: {label!r}: check returned {type(result).__name__}; return None, a bool or a "
        f"one-element bool tensor, or raise AssertionError on a mismatch"
    )


def _check_outputs(label: str, a: Any, b: Any, check: bool | Callable[[Any, Any], Any]) -> None:
    try:
        if check is True:
            torch.testing.assert_close(b, a)
        elif not _check_result(label, check(a, b)):
            raise AssertionError(f"check {getattr(check, '__name__', repr(check))} returned False")
    except AssertionError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise AssertionError(
            f"compare: {label!r}: baseline and trick do not compute the same "
            f"thing, so timing them side by side means nothing: {first}"
        ) from err


def _bound_text(at_least: float | None, at_most: float | None) -> str:
    parts = []
    if at_least is not None:
        parts.append(f"speed-up >= {at_least:g}x")
    if at_most is not None:
        parts.append(f"speed-up <= {at_most:g}x")
    return " and ".join(parts)


def compare(
    label: str,
    baseline: Callable[[], Any],
    trick: Callable[[], Any],
    *,
    repeats: int = 15,
    number: int = 1,
    warmup: int = 2,
    device: str | torch.device,
    check: bool | Callable[[Any, Any], Any] = False,
    at_least: float | None = None,
    at_most: float | None = None,
    attempts: int = 3,
    show: bool = True,
    why: str = "",
    predicts: str = FASTER,
    more_rounds: int = 0,
    budget_s: float = 10.0,
) -> Comparison:
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
        device: where they run (required: ``"cpu"``, ``"cuda"`` or a tensor's ``.device``).
        check: compare the outputs of one call of each before timing, as the PyTorch
            benchmark recipe does: ``True`` uses ``torch.testing.assert_close``; a callable
            ``check(baseline_out, trick_out)`` either raises ``AssertionError`` on a mismatch
            or returns whether they match (``torch.equal``, ``torch.allclose``: ``False`` or
            a one-element ``False`` tensor fails; ``None`` passes).
        at_least, at_most: loose physical bounds on the median speed-up, asserted. When the
            bound is missed the whole comparison is measured again, up to ``attempts`` times
            in all; only the last comparison is printed.
        attempts: measurements allowed to reach the bounds (>= 1).
        show: print the verdict line and the details line (and append the record where
            ``TRICKS_RECORDS`` names a file, see :mod:`tricks_helpers.bench.records`).
        why: the invariant partner (why the trick is faster), kept in the record only.
        predicts: the direction the partner predicts (FASTER, SLOWER or SAME): a partner
            explains the verdict when it is the direction measured (:func:`explains`).
        more_rounds: while the verdict is UNDECIDED, add up to this many rounds, one by one,
            within ``budget_s`` seconds of extra timing; then UNDECIDED it stays. With
            ``more_rounds`` > 0 the round count and coverage are measured values, printed
            with ``~`` on every run. 0 (the default) adds none.
        budget_s: the wall-clock budget of the extra rounds (> 0).

    Returns:
        A :class:`Comparison`; ``.verdict`` is one of :data:`VERDICTS`.

    Raises:
        TypeError: on a non-string label, non-callables or non-integer counts.
        ValueError: on an empty label, counts out of range, or bounds that are not positive.
        AssertionError: when ``check`` finds different outputs, or no attempt reaches the bounds.
        RuntimeError: when the clock does not advance during a timing (a frozen or patched
            clock): a time of 0 would print an infinite speed-up.
    """
    label = check_label("compare", label)
    check_callable("compare", "baseline", baseline)
    check_callable("compare", "trick", trick)
    check_counts("compare", repeats, number, warmup)
    check_int("compare", "attempts", attempts, minimum=1)
    if not (check is True or check is False or callable(check)):
        raise TypeError(f"compare: check must be True, False or a callable, got {check!r}")
    for name, bound in (("at_least", at_least), ("at_most", at_most)):
        if bound is not None:
            check_number("compare", name, bound, minimum=0.0, strict_minimum=True)
    dev = device_class(device)
    threads = torch.get_num_threads()  # the caller's setting, before any candidate changes it
    if check is not False:
        _check_outputs(label, baseline(), trick(), check)
    asserted = _bound_text(at_least, at_most)
    why = check_why("compare", why)
    predicts = check_predicts("compare", predicts)
    check_int("compare", "more_rounds", more_rounds, minimum=0)
    budget_s = check_number("compare", "budget_s", budget_s, minimum=0.0, strict_minimum=True)

    def run() -> Comparison:
        for _ in range(warmup):
            baseline()
            trick()
        base_t, trick_t, ratios = [], [], []

        def one_round(i: int) -> None:
            if i % 2 == 0:
                b = time_once("compare", baseline, number, dev)
                t = time_once("compare", trick, number, dev)
            else:
                t = time_once("compare", trick, number, dev)
                b = time_once("compare", baseline, number, dev)
            base_t.append(b)
            trick_t.append(t)
            ratios.append(b / t)

        def made(adaptive: bool) -> Comparison:
            return Comparison(
                label=label,
                baseline=Measurement(tuple(base_t), dev),
                trick=Measurement(tuple(trick_t), dev),
                ratios=tuple(ratios),
                threads=threads,
                calls_per_round=number,
                checked=check is not False,
                asserted=asserted,
                why=why,
                predicts=predicts,
                adaptive=adaptive,
                _rerun=run,
            )

        for i in range(repeats):
            one_round(i)
        adaptive = more_rounds > 0  # the count may grow: printed as a measurement on every run
        result = made(adaptive)
        if more_rounds and result.verdict == UNDECIDED:
            start = time.perf_counter()
            for i in range(repeats, repeats + more_rounds):
                if time.perf_counter() - start >= budget_s:
                    break
                one_round(i)
                result = made(adaptive)
                if result.verdict != UNDECIDED:
                    break
        return result

    result = run()
    tries = [result]
    while not _within(result.ratio, at_least, at_most) and len(tries) < attempts:
        result = run()
        tries.append(result)
    if show:
        result.show()
    if not _within(result.ratio, at_least, at_most):
        seen = ", ".join(f"{fmt_ratio(c.ratio)}x" for c in tries)
        raise AssertionError(
            f"compare: {label!r}: expected {asserted}, measured {seen} in {len(tries)} attempt(s)"
        )
    return result


def _within(ratio: float, at_least: float | None, at_most: float | None) -> bool:
    return (at_least is None or ratio >= at_least) and (at_most is None or ratio <= at_most)
