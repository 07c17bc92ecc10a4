"""Timing: warm-up, CUDA sync, rounds of several candidates (introduced in chapter 01).

:func:`measure` times one function; :func:`compare_many` times several in the same rounds, each
round in a new seeded random order; :func:`comparison_from_times` pairs times measured elsewhere
into a :class:`~tricks_helpers.bench.comparisons.Comparison`. A baseline and a trick timed side
by side is :func:`tricks_helpers.bench.pairs.compare`. Use the names through the face:
``from tricks_helpers import bench``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tricks_helpers._checks import check_callable, check_int, check_number, check_type
from tricks_helpers.bench.clock import check_counts, device_class, sync, time_once
from tricks_helpers.bench.comparisons import (
    Comparison,
    ManyComparison,
    Measurement,
    check_label,
    check_predicts,
    check_why,
)
from tricks_helpers.bench.intervals import median_interval
from tricks_helpers.bench.verdicts import FASTER, UNDECIDED, decide

__all__ = ["measure", "compare_many", "comparison_from_times"]


def measure(
    fn: Callable[[], Any],
    *,
    repeats: int = 7,
    number: int = 1,
    warmup: int = 2,
    device: str | torch.device,
) -> Measurement:
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
        RuntimeError: when the clock does not advance during a timing.
    """
    check_callable("measure", "fn", fn)
    check_counts("measure", repeats, number, warmup)
    dev = device_class(device)
    for _ in range(warmup):
        fn()
    sync(dev)
    return Measurement(tuple(time_once("measure", fn, number, dev) for _ in range(repeats)), dev)


def comparison_from_times(
    label: str,
    baseline_times: Sequence[float],
    trick_times: Sequence[float],
    *,
    device: str = "cpu",
    threads: int | None = None,
    show: bool = True,
    why: str = "",
    predicts: str = FASTER,
) -> Comparison:
    """A :class:`Comparison` from times measured elsewhere, paired round by round.

    For timings that :func:`compare` cannot take itself, e.g. per-epoch times reported by
    worker processes (chapter 08). Round ``i`` pairs ``baseline_times[i]`` with
    ``trick_times[i]``; pair them so that both sides of a round ran under similar conditions.
    ``show``, ``why`` and ``predicts`` as in :func:`compare`.

    Raises:
        ValueError: on empty or unequal sequences, or a non-positive time.
    """
    label = check_label("comparison_from_times", label)
    if len(baseline_times) == 0 or len(baseline_times) != len(trick_times):
        raise ValueError(
            f"comparison_from_times: need two non-empty sequences of equal length, "
            f"got {len(baseline_times)} and {len(trick_times)}"
        )
    for name, seq in (("baseline_times", baseline_times), ("trick_times", trick_times)):
        for t in seq:
            check_number("comparison_from_times", name, t, minimum=0.0, strict_minimum=True)
    dev = device_class(device)
    result = Comparison(
        label=label,
        baseline=Measurement(tuple(baseline_times), dev),
        trick=Measurement(tuple(trick_times), dev),
        ratios=tuple(b / t for b, t in zip(baseline_times, trick_times)),
        threads=torch.get_num_threads() if threads is None else threads,
        why=check_why("comparison_from_times", why),
        predicts=check_predicts("comparison_from_times", predicts),
    )
    if show:
        result.show()
    return result


def compare_many(
    label: str,
    candidates: Mapping[str, Callable[[], Any]],
    *,
    rounds: int = 5,
    number: int = 1,
    warmup: int = 1,
    device: str | torch.device,
    seed: int = 0,
    settle: Sequence[tuple[str, str]] = (),
    more_rounds: int = 0,
    budget_s: float = 10.0,
) -> ManyComparison:
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
        settle: the ``(baseline, trick)`` pairs whose verdicts the page decides; while one of
            them is UNDECIDED, whole rounds (every candidate) are added, up to ``more_rounds``,
            within ``budget_s`` seconds of extra timing; then UNDECIDED it stays. Every
            comparison of the result then prints its round count and coverage as measured
            values (``~``), on every run. Empty (the default) adds none.
        more_rounds: the most rounds added for ``settle`` (> 0 where ``settle`` is given).
        budget_s: the wall-clock budget of the added rounds (> 0).

    Raises:
        TypeError: on non-callables, non-integer counts or a ``settle`` pair that is not a
            tuple of two names.
        ValueError: on fewer than two candidates, counts out of range, ``settle`` without
            ``more_rounds`` (or the reverse), or a non-positive budget.
        KeyError: on a ``settle`` name that is no candidate.
        RuntimeError: when the clock does not advance during a timing.
    """
    label = check_label("compare_many", label)
    check_type("compare_many", "candidates", candidates, Mapping)
    if len(candidates) < 2:
        raise ValueError(f"compare_many: need at least two candidates, got {len(candidates)}")
    for name, fn in candidates.items():
        check_callable("compare_many", f"candidates[{name!r}]", fn)
    check_counts("compare_many", rounds, number, warmup)
    check_int("compare_many", "seed", seed, minimum=0)
    settle = _check_settle(candidates, settle, more_rounds, budget_s)
    dev = device_class(device)
    threads = torch.get_num_threads()  # the caller's setting, before any candidate changes it
    names = list(candidates)
    for name in names:
        for _ in range(warmup):
            candidates[name]()
    times: dict[str, list[float]] = {n: [] for n in names}
    order_rng = random.Random(seed)

    def one_round() -> None:
        visit = names[:]
        order_rng.shuffle(visit)
        for name in visit:
            times[name].append(time_once("compare_many", candidates[name], number, dev))

    def unsettled() -> bool:
        return any(
            decide(*median_interval([b / t for b, t in zip(times[x], times[y])])) == UNDECIDED
            for x, y in settle
        )

    for _ in range(rounds):
        one_round()
    if settle:
        start = time.perf_counter()
        for _ in range(more_rounds):
            if not unsettled() or time.perf_counter() - start >= budget_s:
                break
            one_round()
    return ManyComparison(
        label=label,
        times={n: tuple(t) for n, t in times.items()},
        device=dev,
        threads=threads,
        calls_per_round=number,
        adaptive=bool(settle),
    )


def _check_settle(
    candidates: Mapping[str, Any],
    settle: Sequence[tuple[str, str]],
    more_rounds: int,
    budget_s: float,
) -> tuple[tuple[str, str], ...]:
    """``settle`` as a tuple of pairs of candidate names, checked with its round budget."""
    check_int("compare_many", "more_rounds", more_rounds, minimum=0)
    check_number("compare_many", "budget_s", budget_s, minimum=0.0, strict_minimum=True)
    pairs = tuple(settle)
    for pair in pairs:
        if not (
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise TypeError(
                f"compare_many: settle must hold (baseline, trick) tuples of names, got {pair!r}"
            )
        for name in pair:
            if name not in candidates:
                raise KeyError(
                    f"compare_many: settle names {name!r}, no candidate; "
                    f"candidates: {list(candidates)}"
                )
    if bool(pairs) != (more_rounds > 0):
        raise ValueError(
            "compare_many: settle and more_rounds go together (pairs to decide, and the most "
            f"rounds to add for them); got {len(pairs)} pair(s) and more_rounds={more_rounds}"
        )
    return pairs
