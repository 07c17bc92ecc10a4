"""Read profiler results as plain data, so a chapter finds a bottleneck by code (chapter 09).

``torch.profiler`` prints a table made for eyes; :func:`op_stats` turns the same numbers
(``prof.key_averages()``) into :class:`OpStat` rows a notebook can sort, filter and assert
on. :func:`range_stats` picks the ``record_function`` ranges a training loop labelled
(``"data"``, ``"forward"``, ...), :func:`largest_range` names the most expensive one, and
:func:`range_durations` lists the duration of every occurrence of a range (one per step), so
that a chapter can decide on the median step, which one step slowed down by another process
cannot move. A range is read on the host (its CPU-side events): with
``ProfilerActivity.CUDA`` each range that launches GPU work also yields a device-side
``gpu_user_annotation`` event of the same name, which would count every step twice (issue 33).
:func:`cprofile_stats` does the same for a :mod:`cProfile` run, with function names
stripped of machine paths. The trace file the profiler exports is read back by
:mod:`tricks_helpers.traces`.

Times are in microseconds as the profiler reports them; they are measurements (print
them with :func:`tricks_helpers.bench.fmt_time`), whereas names and call counts are
facts of the code that ran and can be compared and asserted.
"""

from __future__ import annotations

import cProfile
import os
import pstats
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tricks_helpers._checks import check_bool, check_choice, check_int, check_names, check_type

__all__ = [
    "OpStat",
    "FuncStat",
    "op_stats",
    "top_ops",
    "range_stats",
    "largest_range",
    "range_durations",
    "cprofile_stats",
]

_SORT_KEYS = ("self_cpu_us", "cpu_total_us", "calls", "self_cpu_memory_bytes", "self_device_us")


@dataclass(frozen=True)
class OpStat:
    """One row of ``key_averages()``: an operator or a ``record_function`` range.

    Attributes:
        name: e.g. ``"aten::mm"`` or a range name such as ``"data"``.
        calls: how many times it ran while the profiler recorded.
        self_cpu_us: CPU time inside it, excluding the operators it called (microseconds).
        cpu_total_us: CPU time including its children (microseconds).
        self_cpu_memory_bytes: bytes it allocated minus bytes it freed (needs
            ``profile_memory=True``; 0 otherwise).
        self_device_us: time on the accelerator (CUDA) itself (0 without CUDA activity).
        is_range: it is a user range (``record_function``), not an operator.
        device: where the row's events ran, ``"cpu"`` (operators and ranges on the host) or
            the accelerator (``"cuda"``: kernels and the device-side copy of a range).
    """

    name: str
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_cpu_memory_bytes: int
    self_device_us: float
    is_range: bool
    device: str = "cpu"


def _key_averages(source: Any) -> Iterable[Any]:
    from torch.autograd.profiler_util import EventList, FunctionEventAvg

    if isinstance(source, EventList):
        if all(isinstance(e, FunctionEventAvg) for e in source):
            return source  # already key_averages()
        return source.key_averages()  # raw events()
    if hasattr(source, "key_averages"):  # a profiler object
        return source.key_averages()
    raise TypeError(
        f"expected a torch.profiler.profile or its key_averages(), got {type(source).__name__}"
    )


def _device_name(device_type: Any) -> str:
    """``DeviceType.CUDA`` -> ``"cuda"``; a missing device type is the host's (``"cpu"``)."""
    return "cpu" if device_type is None else str(device_type).rsplit(".", 1)[-1].lower()


def op_stats(source: Any) -> list[OpStat]:
    """All rows of a profile as :class:`OpStat`, in the profiler's order.

    Args:
        source: a finished ``torch.profiler.profile`` (or ``torch.autograd.profiler`` one),
            or the result of its ``key_averages()``.

    Raises:
        TypeError: ``source`` is neither.
    """
    rows = []
    for e in _key_averages(source):
        rows.append(
            OpStat(
                name=e.key,
                calls=int(e.count),
                self_cpu_us=float(e.self_cpu_time_total),
                cpu_total_us=float(e.cpu_time_total),
                self_cpu_memory_bytes=int(getattr(e, "self_cpu_memory_usage", 0) or 0),
                self_device_us=float(getattr(e, "self_device_time_total", 0) or 0),
                is_range=bool(getattr(e, "is_user_annotation", False)),
                device=_device_name(getattr(e, "device_type", None)),
            )
        )
    return rows


def top_ops(
    source: Any, n: int = 5, by: str = "self_cpu_us", *, include_ranges: bool = False
) -> list[OpStat]:
    """The ``n`` rows with the largest ``by``, largest first (ties: by name, for stability).

    Args:
        source: see :func:`op_stats`.
        n: how many rows.
        by: one of ``self_cpu_us``, ``cpu_total_us``, ``calls``, ``self_cpu_memory_bytes``,
            ``self_device_us``.
        include_ranges: keep ``record_function`` ranges (default: operators only).

    Raises:
        TypeError: ``n`` is not an integer or ``include_ranges`` not a bool.
        ValueError: on an unknown ``by`` or ``n < 1``.
    """
    check_type("top_ops", "by", by, str)
    check_choice("top_ops", "by", by, _SORT_KEYS)
    n = check_int("top_ops", "n", n, minimum=1)
    check_bool("top_ops", "include_ranges", include_ranges)
    rows = [r for r in op_stats(source) if include_ranges or not r.is_range]
    return sorted(rows, key=lambda r: (-getattr(r, by), r.name))[:n]


def range_stats(source: Any, names: Sequence[str]) -> dict[str, OpStat]:
    """The host-side rows of the ``record_function`` ranges ``names``, in the order given.

    A CUDA profile holds a second row per range, its device-side ``gpu_user_annotation``
    copy (``device="cuda"``); it is left out, so a row's ``calls`` and CPU times are the
    range's own on any device.

    Raises:
        TypeError: ``names`` is one string, or not a sequence of strings.
        ValueError: ``names`` is empty, or a range was not recorded (the message lists the
            ranges that were).
    """
    check_names("range_stats", names)
    rows = {r.name: r for r in op_stats(source) if r.device == "cpu"}
    missing = [n for n in names if n not in rows]
    if missing:
        recorded = sorted(r.name for r in rows.values() if r.is_range)
        raise ValueError(
            f"range_stats: range(s) {missing} not in the profile; recorded ranges: {recorded}"
        )
    return {n: rows[n] for n in names}


def largest_range(source: Any, names: Sequence[str], by: str = "cpu_total_us") -> str:
    """Name of the range among ``names`` with the largest ``by`` (default: CPU time total).

    Raises:
        TypeError, ValueError: as :func:`range_stats`, or on an unknown ``by``.
    """
    check_type("largest_range", "by", by, str)
    check_choice("largest_range", "by", by, _SORT_KEYS)
    check_names("largest_range", names)
    stats = range_stats(source, names)
    return max(names, key=lambda n: getattr(stats[n], by))


def range_durations(source: Any, names: Sequence[str]) -> dict[str, list[float]]:
    """Duration of every occurrence of the ``record_function`` ranges ``names``, in time order.

    With a ``schedule``, a range opened once per step gives one duration per kept step, so
    ``statistics.median`` of the list is the time of a typical step.

    Args:
        source: a finished ``torch.profiler.profile``, or its ``events()`` (not
            ``key_averages()``, which has only totals).
        names: the ranges, e.g. ``["data", "forward"]``.

    Returns:
        name -> durations in microseconds (wall time on the CPU thread, children included),
        one per occurrence on the host: the device-side ``gpu_user_annotation`` events of
        the same name that ``ProfilerActivity.CUDA`` adds are not counted.

    Raises:
        TypeError: ``source`` is neither, or ``names`` is not a sequence of strings.
        ValueError: ``names`` is empty or a range was not recorded.
    """
    from torch.autograd.profiler_util import EventList, FunctionEventAvg

    check_names("range_durations", names)
    events = source.events() if hasattr(source, "events") and callable(source.events) else source
    if not isinstance(events, EventList) or any(isinstance(e, FunctionEventAvg) for e in events):
        raise TypeError(
            "range_durations: expected a torch.profiler.profile or its events(), got "
            f"{type(source).__name__} (key_averages() has totals only)"
        )
    found: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for e in events:
        if e.name in found and _device_name(getattr(e, "device_type", None)) == "cpu":
            found[e.name].append((float(e.time_range.start), float(e.time_range.elapsed_us())))
    missing = [n for n, d in found.items() if not d]
    if missing:
        raise ValueError(f"range_durations: range(s) {missing} not in the profile")
    return {n: [d for _, d in sorted(found[n])] for n in names}


@dataclass(frozen=True)
class FuncStat:
    """One function of a :mod:`cProfile` run.

    Attributes:
        name: the function name; built-ins as cProfile names them, e.g.
            ``"<method 'std' of 'torch._C.TensorBase' objects>"``.
        where: ``"file.py:line"`` with the directory dropped (``"~"`` for built-ins).
        calls: total calls (recursive ones included).
        tottime: seconds inside the function itself.
        cumtime: seconds including what it called.
        callers: names of the functions that called it, sorted.
    """

    name: str
    where: str
    calls: int
    tottime: float
    cumtime: float
    callers: tuple[str, ...]

    @property
    def builtin(self) -> bool:
        return self.where == "~"


def _where(filename: str, line: int) -> str:
    if filename == "~":
        return "~"
    return f"{os.path.basename(filename)}:{line}"


def cprofile_stats(
    source: cProfile.Profile | pstats.Stats, sort: str = "tottime"
) -> list[FuncStat]:
    """Every function of a cProfile run as :class:`FuncStat`, largest ``sort`` first.

    Args:
        source: a ``cProfile.Profile`` that has been run, or ``pstats.Stats`` of one.
        sort: ``"tottime"``, ``"cumtime"`` or ``"calls"``.

    Raises:
        ValueError: on another ``sort``, or a profile that recorded nothing.
        TypeError: ``source`` is neither type, or ``sort`` is not a string.
    """
    check_type("cprofile_stats", "sort", sort, str)
    check_choice("cprofile_stats", "sort", sort, ("tottime", "cumtime", "calls"))
    if isinstance(source, cProfile.Profile):
        try:
            source = pstats.Stats(source)
        except TypeError:
            raise ValueError(
                "cprofile_stats: the profile recorded nothing (was it enabled?)"
            ) from None
    if not isinstance(source, pstats.Stats):
        raise TypeError(
            f"cprofile_stats: expected cProfile.Profile or pstats.Stats, got "
            f"{type(source).__name__}"
        )
    rows = []
    for (filename, line, func), (_, calls, tt, ct, callers) in source.stats.items():
        rows.append(
            FuncStat(
                name=func,
                where=_where(filename, line),
                calls=int(calls),
                tottime=float(tt),
                cumtime=float(ct),
                callers=tuple(sorted({c[2] for c in callers})),
            )
        )
    if not rows:
        raise ValueError("cprofile_stats: the profile recorded nothing (was it enabled?)")
    return sorted(rows, key=lambda r: (-getattr(r, sort), r.name, r.where))
