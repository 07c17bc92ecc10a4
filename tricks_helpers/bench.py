"""Correct timing and side-by-side comparisons with verdicts (introduced in chapter 01).

Guarantees:

- every timed call is preceded by warm-up calls, and on CUDA by ``torch.cuda.synchronize()``
  before the clock starts and before it stops;
- :func:`compare` interleaves baseline and trick round by round, so slow drifts of the
  machine (other processes, frequency scaling) hit both alike; the ratio is the median of
  the per-round ratios;
- the verdict is decided by code against a conservative threshold per device class
  (:data:`MIN_SPEEDUP`), never by a reader squinting at digits;
- every measured number is printed with a ``~`` (value) or ``±`` (spread) prefix and the
  device inside ``[...]``; the repository's sanitize file masks exactly those, so nbval
  still compares the label, the structure and the verdict word.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

__all__ = [
    "MIN_SPEEDUP", "FASTER", "SLOWER", "NO_CLEAR_DIFFERENCE", "Measurement", "Comparison",
    "measure", "compare", "decide", "device_class", "fmt_time", "fmt_measured",
]

#: Speed-up (baseline time / trick time) a trick must reach before it is called FASTER.
#: Conservative: about half the gain typically seen, and above the run-to-run noise of a
#: shared 2-core CI machine. A ratio below 1/threshold is called SLOWER.
MIN_SPEEDUP: dict[str, float] = {"cpu": 1.15, "cuda": 1.10}

FASTER = "FASTER"
SLOWER = "SLOWER"
NO_CLEAR_DIFFERENCE = "NO CLEAR DIFFERENCE"


def device_class(device: str | torch.device | None = None) -> str:
    """Return ``"cuda"`` or ``"cpu"`` for ``device`` (default: CUDA when available)."""
    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    kind = torch.device(device).type
    if kind not in MIN_SPEEDUP:
        raise ValueError(f"device_class: unsupported device type {kind!r}; expected one of "
                         f"{sorted(MIN_SPEEDUP)}")
    return kind


def _check_positive_int(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _check_counts(repeats: int, number: int, warmup: int) -> None:
    _check_positive_int("repeats", repeats)
    _check_positive_int("number", number)
    _check_positive_int("warmup", warmup, minimum=0)


def fmt_measured(value: float, digits: int = 3) -> str:
    """Format a measured number as ``~value`` (the sanitize file masks ``~<digits>``)."""
    return f"~{value:.{digits}g}"


def fmt_time(seconds: float) -> str:
    """Format a measured duration with a sensible unit, e.g. ``~1.23 ms``."""
    if seconds < 0:
        raise ValueError(f"fmt_time: negative duration {seconds!r}")
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{fmt_measured(seconds / scale)} {unit}"
    return f"{fmt_measured(seconds / 1e-9)} ns"


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
        fn: a function of no arguments (wrap arguments with a lambda).
        repeats: timed repeats; the median and spread are taken over them.
        number: calls per repeat (raise it for very short functions).
        warmup: untimed calls first (allocator, caches, lazy init, compilation).
        device: where ``fn`` runs; on CUDA the clock waits for the GPU to finish.

    Returns:
        A :class:`Measurement` of seconds per call.

    Raises:
        ValueError: on a non-callable ``fn`` or non-positive counts.
    """
    if not callable(fn):
        raise ValueError(f"measure: fn must be callable, got {type(fn).__name__}")
    _check_counts(repeats, number, warmup)
    dev = device_class(device)
    for _ in range(warmup):
        fn()
    _sync(dev)
    return Measurement(tuple(_time_once(fn, number, dev) for _ in range(repeats)), dev)


def decide(ratio: float, threshold: float) -> str:
    """Verdict for a speed-up ``ratio`` (baseline / trick) against ``threshold`` (> 1)."""
    if threshold <= 1:
        raise ValueError(f"decide: threshold must be > 1, got {threshold!r}")
    if not ratio > 0:
        raise ValueError(f"decide: ratio must be a positive number, got {ratio!r}")
    if ratio >= threshold:
        return FASTER
    if ratio <= 1 / threshold:
        return SLOWER
    return NO_CLEAR_DIFFERENCE


@dataclass(frozen=True)
class Comparison:
    """A baseline and a trick timed side by side in one run."""

    label: str
    baseline: Measurement
    trick: Measurement
    ratio: float
    threshold: float
    threads: int

    @property
    def device(self) -> str:
        return self.baseline.device

    @property
    def verdict(self) -> str:
        return decide(self.ratio, self.threshold)

    def line(self) -> str:
        """The one fixed-format line (see the module docstring for what is sanitized)."""
        return (f"[bench] {self.label}: baseline {fmt_time(self.baseline.median)}, "
                f"trick {fmt_time(self.trick.median)}, speed-up {fmt_measured(self.ratio)}x "
                f"[{self.device}, {self.threads} threads, needs {self.threshold:.2f}x] -> {self.verdict}")

    def __str__(self) -> str:
        return self.line()


def compare(label: str, baseline: Callable[[], Any], trick: Callable[[], Any], *,
            repeats: int = 7, number: int = 1, warmup: int = 2,
            device: str | torch.device | None = None, threshold: float | None = None,
            show: bool = True) -> Comparison:
    """Time ``baseline`` and ``trick`` side by side and decide a verdict.

    Rounds alternate baseline and trick (which goes first alternates too); the speed-up is
    the median over rounds of ``baseline time / trick time``.

    Args:
        label: what is compared, e.g. ``"conv+bn fusion"``; printed at the start of the line.
        baseline, trick: functions of no arguments doing the same work two ways.
        repeats, number, warmup: as in :func:`measure`.
        device: where they run (default: CUDA when available, else CPU).
        threshold: speed-up needed for FASTER (default :data:`MIN_SPEEDUP` of the device class).
        show: print the fixed-format line.

    Returns:
        A :class:`Comparison`; ``.verdict`` is one of FASTER, SLOWER, NO CLEAR DIFFERENCE.

    Raises:
        ValueError: on an empty label, non-callables, bad counts or a threshold <= 1.
    """
    if not isinstance(label, str) or not label.strip():
        raise ValueError("compare: label must be a non-empty string")
    for name, fn in (("baseline", baseline), ("trick", trick)):
        if not callable(fn):
            raise ValueError(f"compare: {name} must be callable, got {type(fn).__name__}")
    _check_counts(repeats, number, warmup)
    dev = device_class(device)
    threshold = MIN_SPEEDUP[dev] if threshold is None else float(threshold)
    if threshold <= 1:
        raise ValueError(f"compare: threshold must be > 1, got {threshold!r}")
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
        ratios.append(b / t)
    result = Comparison(label=label.strip(), baseline=Measurement(tuple(base_t), dev),
                        trick=Measurement(tuple(trick_t), dev), ratio=statistics.median(ratios),
                        threshold=threshold, threads=torch.get_num_threads())
    if show:
        print(result.line())
    return result
