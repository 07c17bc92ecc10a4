"""Read profiler results as plain data, so a chapter finds a bottleneck by code (chapter 09).

``torch.profiler`` prints a table made for eyes; :func:`op_stats` turns the same numbers
(``prof.key_averages()``) into :class:`OpStat` rows a notebook can sort, filter and assert
on. :func:`range_stats` picks the ``record_function`` ranges a training loop labelled
(``"data"``, ``"forward"``, ...), :func:`largest_range` names the most expensive one.
:func:`cprofile_stats` does the same for a :mod:`cProfile` run, with function names
stripped of machine paths, and :func:`trace_event_counts` reads a Chrome trace file
(``prof.export_chrome_trace``) back to count the events in it.

Times are in microseconds as the profiler reports them; they are measurements (print
them with :func:`tricks_helpers.bench.fmt_time`), whereas names and call counts are
facts of the code that ran and can be compared and asserted.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

__all__ = ["OpStat", "FuncStat", "op_stats", "top_ops", "range_stats", "largest_range",
           "cprofile_stats", "trace_event_counts"]

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
    """

    name: str
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_cpu_memory_bytes: int
    self_device_us: float
    is_range: bool


def _key_averages(source: Any) -> Iterable[Any]:
    from torch.autograd.profiler_util import EventList, FunctionEventAvg
    if isinstance(source, EventList):
        if all(isinstance(e, FunctionEventAvg) for e in source):
            return source                      # already key_averages()
        return source.key_averages()           # raw events()
    if hasattr(source, "key_averages"):        # a profiler object
        return source.key_averages()
    raise TypeError("expected a torch.profiler.profile or its key_averages(), got "
                    f"{type(source).__name__}")


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
        rows.append(OpStat(
            name=e.key, calls=int(e.count), self_cpu_us=float(e.self_cpu_time_total),
            cpu_total_us=float(e.cpu_time_total),
            self_cpu_memory_bytes=int(getattr(e, "self_cpu_memory_usage", 0) or 0),
            self_device_us=float(getattr(e, "self_device_time_total", 0) or 0),
            is_range=bool(getattr(e, "is_user_annotation", False))))
    return rows


def top_ops(source: Any, n: int = 5, by: str = "self_cpu_us", *,
            include_ranges: bool = False) -> list[OpStat]:
    """The ``n`` rows with the largest ``by``, largest first (ties: by name, for stability).

    Args:
        source: see :func:`op_stats`.
        n: how many rows.
        by: one of ``self_cpu_us``, ``cpu_total_us``, ``calls``, ``self_cpu_memory_bytes``,
            ``self_device_us``.
        include_ranges: keep ``record_function`` ranges (default: operators only).

    Raises:
        ValueError: on an unknown ``by`` or ``n < 1``.
    """
    if by not in _SORT_KEYS:
        raise ValueError(f"top_ops: by must be one of {_SORT_KEYS}, got {by!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"top_ops: n must be an integer >= 1, got {n!r}")
    rows = [r for r in op_stats(source) if include_ranges or not r.is_range]
    return sorted(rows, key=lambda r: (-getattr(r, by), r.name))[:n]


def range_stats(source: Any, names: Sequence[str]) -> dict[str, OpStat]:
    """The rows of the ``record_function`` ranges ``names``, in the order given.

    Raises:
        ValueError: ``names`` is empty, or a range was not recorded (the message lists the
            ranges that were).
    """
    if isinstance(names, str) or not names:
        raise ValueError("range_stats: names must be a non-empty sequence of range names")
    rows = {r.name: r for r in op_stats(source)}
    missing = [n for n in names if n not in rows]
    if missing:
        recorded = sorted(r.name for r in rows.values() if r.is_range)
        raise ValueError(f"range_stats: range(s) {missing} not in the profile; recorded "
                         f"ranges: {recorded}")
    return {n: rows[n] for n in names}


def largest_range(source: Any, names: Sequence[str], by: str = "cpu_total_us") -> str:
    """Name of the range among ``names`` with the largest ``by`` (default: CPU time total)."""
    if by not in _SORT_KEYS:
        raise ValueError(f"largest_range: by must be one of {_SORT_KEYS}, got {by!r}")
    stats = range_stats(source, names)
    return max(names, key=lambda n: getattr(stats[n], by))


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


def cprofile_stats(source: cProfile.Profile | pstats.Stats, sort: str = "tottime") -> list[FuncStat]:
    """Every function of a cProfile run as :class:`FuncStat`, largest ``sort`` first.

    Args:
        source: a ``cProfile.Profile`` that has been run, or ``pstats.Stats`` of one.
        sort: ``"tottime"``, ``"cumtime"`` or ``"calls"``.

    Raises:
        ValueError: on another ``sort``, or a profile that recorded nothing.
        TypeError: ``source`` is neither type.
    """
    if sort not in ("tottime", "cumtime", "calls"):
        raise ValueError(f"cprofile_stats: sort must be 'tottime', 'cumtime' or 'calls', got {sort!r}")
    if isinstance(source, cProfile.Profile):
        try:
            source = pstats.Stats(source)
        except TypeError:
            raise ValueError("cprofile_stats: the profile recorded nothing (was it enabled?)") from None
    if not isinstance(source, pstats.Stats):
        raise TypeError(f"cprofile_stats: expected cProfile.Profile or pstats.Stats, got "
                        f"{type(source).__name__}")
    rows = []
    for (filename, line, func), (_, calls, tt, ct, callers) in source.stats.items():
        rows.append(FuncStat(name=func, where=_where(filename, line), calls=int(calls),
                             tottime=float(tt), cumtime=float(ct),
                             callers=tuple(sorted({c[2] for c in callers}))))
    if not rows:
        raise ValueError("cprofile_stats: the profile recorded nothing (was it enabled?)")
    return sorted(rows, key=lambda r: (-getattr(r, sort), r.name, r.where))


def trace_event_counts(path: str | os.PathLike, category: str | None = "user_annotation") -> Counter:
    """Count the events of a Chrome trace file by name (e.g. one ``data`` event per step).

    Args:
        path: a file written by ``prof.export_chrome_trace``.
        category: keep only events of this ``cat`` (default: ``record_function`` ranges);
            ``None`` counts every named event.

    Raises:
        ValueError: the file is not a Chrome trace (no ``traceEvents`` list).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"trace_event_counts: {Path(path).name} is not JSON ({exc.msg})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise ValueError(f"trace_event_counts: {Path(path).name} has no 'traceEvents' list; "
                         "is it a Chrome trace from export_chrome_trace?")
    return Counter(e["name"] for e in events
                   if isinstance(e, dict) and "name" in e and (category is None or e.get("cat") == category))
