"""Read a profiler trace file back as plain data: event counts and a timeline (chapter 09).

``prof.export_chrome_trace(path)`` writes what the profiler saw as a Chrome trace (JSON, or
gzip-compressed JSON for a ``.gz`` path), the file a reader opens in Perfetto or
``chrome://tracing``. :func:`trace_event_counts` counts its events by name (e.g. one ``data``
range per step), and :func:`trace_spans` returns its complete events as a timeline (start and
duration of each), e.g. to plot. Names and counts are facts of the code that ran; times are
measurements.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tricks_helpers._checks import check_names, check_type

__all__ = ["TraceSpan", "trace_event_counts", "trace_spans"]


def _trace_events(where: str, path: Any) -> list[Any]:
    """The ``traceEvents`` list of a Chrome trace, plain JSON or gzip (detected by content)."""
    check_type(where, "path", path, (str, os.PathLike))
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":  # gzip magic: export_chrome_trace("....json.gz") writes this
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"{where}: {path.name} is a damaged gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"{where}: {path.name} is not a UTF-8 JSON file nor gzip-compressed "
            f"JSON; is it a Chrome trace from export_chrome_trace?"
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: {path.name} is not JSON ({exc.msg})") from None
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise ValueError(
            f"{where}: {path.name} has no 'traceEvents' list; "
            "is it a Chrome trace from export_chrome_trace?"
        )
    return events


def _check_category(where: str, category: Any) -> None:
    if category is not None:
        check_type(where, "category", category, str)


def trace_event_counts(
    path: str | os.PathLike, category: str | None = "user_annotation"
) -> Counter:
    """Count the events of a Chrome trace file by name (e.g. one ``data`` event per step).

    Args:
        path: a file written by ``prof.export_chrome_trace``; gzip-compressed files (what it
            writes for a ``.gz`` path) are recognised by their content and read too.
        category: keep only events of this ``cat`` (default: ``record_function`` ranges);
            ``None`` counts every named event.

    Raises:
        TypeError: ``path`` is not a path or ``category`` not a string or ``None``.
        ValueError: the file is not a Chrome trace (not JSON, damaged gzip, or no
            ``traceEvents`` list); the message names the file.
    """
    _check_category("trace_event_counts", category)
    events = _trace_events("trace_event_counts", path)
    return Counter(
        e["name"]
        for e in events
        if isinstance(e, dict) and "name" in e and (category is None or e.get("cat") == category)
    )


@dataclass(frozen=True)
class TraceSpan:
    """One complete event (``"ph": "X"``) of a Chrome trace: a range or an operator.

    Attributes:
        name: e.g. ``"data"`` or ``"aten::mm"``; ``"ProfilerStep#3"`` for a step.
        start_us: microseconds from the first complete event of the selected category (of
            any category when :func:`trace_spans` was called with ``category=None``).
        duration_us: its duration in microseconds.
        thread: the thread it ran on, as the trace names it.
        category: the event's ``cat``, e.g. ``"user_annotation"`` for a ``record_function``
            range, ``"cpu_op"`` for an operator, ``"gpu_user_annotation"`` for a range on a
            GPU stream.
    """

    name: str
    start_us: float
    duration_us: float
    thread: str
    category: str


def trace_spans(
    path: str | os.PathLike,
    names: Sequence[str] | None = None,
    category: str | None = "user_annotation",
) -> list[TraceSpan]:
    """The complete events of a Chrome trace as a timeline, in time order.

    Times are measurements (they change from run to run); names, counts and the order of
    the ranges within a step are facts of the code that ran.

    Args:
        path: a Chrome trace, plain or gzip-compressed (see :func:`trace_event_counts`).
        names: keep only events with these names (default: all of the category).
        category: keep only events of this ``cat`` (default: ``record_function`` ranges,
            ``ProfilerStep#N`` included); ``None`` keeps every complete event (read the
            trace once, then split by :attr:`TraceSpan.category`).

    Returns:
        :class:`TraceSpan` rows sorted by start, longer first on ties (an enclosing range
        before the ranges it contains). The time origin is the first event of the
        category, whatever ``names`` keeps, so filtered timelines line up.

    Raises:
        TypeError: on arguments of the wrong type.
        ValueError: the file is not a Chrome trace, or a name in ``names`` has no event.
    """
    _check_category("trace_spans", category)
    if names is not None:
        check_names("trace_spans", names)
    events = [
        e
        for e in _trace_events("trace_spans", path)
        if isinstance(e, dict)
        and e.get("ph") == "X"
        and "name" in e
        and isinstance(e.get("ts"), (int, float))
        and (category is None or e.get("cat") == category)
    ]
    if not events:
        return []
    origin = min(float(e["ts"]) for e in events)
    if names is not None:
        missing = sorted(set(names) - {e["name"] for e in events})
        if missing:
            raise ValueError(
                f"trace_spans: no events named {missing} in "
                f"{Path(path).name} (category {category!r})"
            )
        events = [e for e in events if e["name"] in set(names)]
    spans = [
        TraceSpan(
            name=str(e["name"]),
            start_us=float(e["ts"]) - origin,
            duration_us=float(e.get("dur", 0.0)),
            thread=str(e.get("tid", "")),
            category=str(e.get("cat", "")),
        )
        for e in events
    ]
    return sorted(spans, key=lambda sp: (sp.start_us, -sp.duration_us, sp.name))
