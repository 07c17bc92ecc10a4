"""Timing: warm-up, CUDA sync, interleaved rounds (introduced in chapter 01).

:func:`measure` times one function; :func:`compare` and :func:`compare_many` time candidates
round by round and hand the times to :mod:`tricks_helpers.bench.verdicts`, which judges and
prints them. Use the names through the face: ``from tricks_helpers import bench``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tricks_helpers._checks import check_callable, check_int, check_number, check_type
from tricks_helpers.bench.verdicts import (
    FASTER,
    UNDECIDED,
    Comparison,
    ManyComparison,
    Measurement,
    check_label,
    check_predicts,
    check_why,
    fmt_ratio,
)

__all__ = [
    "measure",
    "compare",
    "compare_many",
    "comparison_from_times",
    "device_class",
]

_DEVICE_TYPES = ("cpu", "cuda")


def device_class(device: str | torch.device) -> str:
    """Return ``"cuda"`` or ``"cpu"`` for ``device``: the device the timed work runs on.

    There is no default: a timing's device comes from what is timed, never from what the
    machine has, so CPU-only work timed on a machine with a GPU is still labelled ``"cpu"``
    (and not synchronised with the GPU).

    Raises:
        TypeError: when ``device`` is ``None`` or not a device (pass ``"cpu"``, ``"cuda"`` or
            the ``.device`` of the tensors the timed function works on).
        ValueError: for another device type (``"mps"``, ``"meta"``...).
    """
    if device is None:
        raise TypeError(
            "device_class: device is required: pass where the timed work runs ('cpu', "
            "'cuda', or a tensor's .device), not what the machine has"
        )
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"device_class: device must be a str or torch.device, got {type(device).__name__}"
        )
    kind = torch.device(device).type
    if kind not in _DEVICE_TYPES:
        raise ValueError(
            f"device_class: unsupported device type {kind!r}; expected one of {list(_DEVICE_TYPES)}"
        )
    return kind


def _check_counts(where: str, repeats: int, number: int, warmup: int) -> None:
    check_int(where, "repeats", repeats, minimum=1)
    check_int(where, "number", number, minimum=1)
    check_int(where, "warmup", warmup, minimum=0)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time_once(where: str, fn: Callable[[], Any], number: int, device: str) -> float:
    """Seconds per call of ``number`` calls; refuses a clock that did not advance."""
    _sync(device)
    start = time.perf_counter()
    for _ in range(number):
        fn()
    _sync(device)
    elapsed = time.perf_counter() - start
    if not elapsed > 0:
        raise RuntimeError(
            f"{where}: the clock did not advance while timing ({elapsed!r} s for {number} "
            f"call(s)): time.perf_counter is frozen or patched, or the calls are shorter than "
            f"its resolution (raise number=). A time of 0 would make an infinite speed-up."
        )
    return elapsed / number


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
    _check_counts("measure", repeats, number, warmup)
    dev = device_class(device)
    for _ in range(warmup):
        fn()
    _sync(dev)
    return Measurement(tuple(_time_once("measure", fn, number, dev) for _ in range(repeats)), dev)


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
    _check_counts("compare", repeats, number, warmup)
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
                b = _time_once("compare", baseline, number, dev)
                t = _time_once("compare", trick, number, dev)
            else:
                t = _time_once("compare", trick, number, dev)
                b = _time_once("compare", baseline, number, dev)
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

    Raises:
        TypeError: on non-callables or non-integer counts.
        ValueError: on fewer than two candidates or counts out of range.
        RuntimeError: when the clock does not advance during a timing.
    """
    label = check_label("compare_many", label)
    check_type("compare_many", "candidates", candidates, Mapping)
    if len(candidates) < 2:
        raise ValueError(f"compare_many: need at least two candidates, got {len(candidates)}")
    for name, fn in candidates.items():
        check_callable("compare_many", f"candidates[{name!r}]", fn)
    _check_counts("compare_many", rounds, number, warmup)
    check_int("compare_many", "seed", seed, minimum=0)
    dev = device_class(device)
    threads = torch.get_num_threads()  # the caller's setting, before any candidate changes it
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
            times[name].append(_time_once("compare_many", candidates[name], number, dev))
    return ManyComparison(
        label=label,
        times={n: tuple(t) for n, t in times.items()},
        device=dev,
        threads=threads,
        calls_per_round=number,
    )
