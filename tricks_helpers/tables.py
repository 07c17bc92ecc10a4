"""One aligned text table for measured rows: times, throughputs, unit-bearing values (ch. 03-07).

:func:`tricks_helpers.bench.summaries.table` prints comparisons (baseline, trick, speed-up,
verdict); :func:`measured_table` prints everything else a chapter measures, one row per label:
a time per item, a throughput, a loss, an accuracy, next to facts (byte counts, dtypes) in the
same row.

Measured cells (:class:`Measured`) print ``~`` before their digits and ``±`` before their spread,
right-aligned in a column of fixed width, so the repository's sanitize file masks exactly the
digits (and the padding before them) while labels, units, headers and facts stay compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tricks_helpers._checks import check_int, check_number, check_type
from tricks_helpers.bench.verdicts import Measurement, fmt_measured, fmt_time

__all__ = ["Measured", "measured_table"]

_VALUE_WIDTH = 10  # "~-1.23e+05": the longest value fmt_measured prints with 3 digits
_SPREAD_WIDTH = 7  # " ±1.2e+02%" is rarer; " ±12%" / " ±0.52%" fit


@dataclass(frozen=True)
class Measured:
    """A measured number for :func:`measured_table`: value, unit, and relative spread.

    Attributes:
        value: the measured value (seconds when ``unit == "time"``).
        unit: printed after the value and a space (``"%"`` without the space); ``"time"``
            picks a time unit (``~1.23 ms``, see :func:`fmt_time`); ``""``: the bare number.
        spread: relative spread (0.05 prints ``±5%``), or None to print none.
        digits: significant digits of the value.
    """

    value: float
    unit: str = ""
    spread: float | None = None
    digits: int = 3

    def __post_init__(self) -> None:
        check_number("Measured", "value", self.value, allow_inf=False)
        check_type("Measured", "unit", self.unit, str)
        if "\n" in self.unit:
            raise ValueError(f"Measured: unit must be one line, got {self.unit!r}")
        if self.spread is not None:
            check_number("Measured", "spread", self.spread, minimum=0.0)
        check_int("Measured", "digits", self.digits, minimum=1, maximum=9)

    @classmethod
    def time(cls, measurement: Measurement, items: int = 1) -> Measured:
        """Seconds per item of a timed call that handles ``items`` items, with its spread."""
        check_type("Measured.time", "measurement", measurement, Measurement)
        items = check_int("Measured.time", "items", items, minimum=1)
        return cls(measurement.median / items, "time", _relative_spread(measurement))

    @classmethod
    def rate(cls, measurement: Measurement, items: float, unit: str = "") -> Measured:
        """Items per second of a timed call that handles ``items`` items, with its spread."""
        check_type("Measured.rate", "measurement", measurement, Measurement)
        items = check_number("Measured.rate", "items", items, minimum=0.0, strict_minimum=True)
        return cls(measurement.per_second(items), unit, _relative_spread(measurement))

    def __str__(self) -> str:
        if self.unit == "time":
            text = fmt_time(self.value) if self.value >= 0 else fmt_measured(self.value)
        else:
            gap = "" if self.unit in ("", "%") else " "
            text = f"{fmt_measured(self.value, self.digits)}{gap}{self.unit}"
        if self.spread is not None:
            text += f" ±{100 * self.spread:.2g}%"
        return text

    def width(self) -> int:
        """The column width this cell reserves, whatever digits it prints."""
        unit = 3 if self.unit == "time" else len(self.unit) + (self.unit not in ("", "%"))
        return _VALUE_WIDTH + unit + (_SPREAD_WIDTH if self.spread is not None else 0)


def _relative_spread(m: Measurement) -> float:
    return m.spread / m.median if m.median > 0 else 0.0


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    check_type("measured_table", "cell", value, (Measured, str))
    text = str(value)
    if "\n" in text:
        raise ValueError(f"measured_table: cells must be one line, got {text!r}")
    return text


def measured_table(
    header: Sequence[str],
    rows: Mapping[str, Sequence[Any]] | Iterable[Sequence[Any]],
) -> str:
    """An aligned text table: a left-aligned label column, then right-aligned value columns.

    Cells may be :class:`Measured` (printed with ``~`` and ``±``, in a column of fixed width so
    the line does not move when the digits change), ``int`` facts (with thousands separators),
    ``bool`` or ``str`` facts (as given). Rows keep their order.

    Args:
        header: the column titles, the label column's first.
        rows: ``{label: cells}`` or sequences ``(label, *cells)``; each row has
            ``len(header) - 1`` cells.

    Returns:
        The table's lines joined by newlines (no trailing newline).

    Raises:
        TypeError: on a header or label that is not a string, or a cell of another type.
        ValueError: on fewer than two columns, a row of the wrong length, no rows, or a
            multi-line cell.
    """
    if isinstance(header, str) or not isinstance(header, Sequence):
        raise TypeError("measured_table: header must be a sequence of column titles")
    for title in header:
        check_type("measured_table", "column title", title, str)
    if len(header) < 2:
        raise ValueError(f"measured_table: needs a label column and a value column, got {header}")
    items = (
        [(k, list(v)) for k, v in rows.items()]
        if isinstance(rows, Mapping)
        else [(r[0], list(r[1:])) for r in rows]
    )
    if not items:
        raise ValueError("measured_table: no rows")
    body, widths = [], [len(t) for t in header]
    for label, cells in items:
        check_type("measured_table", "row label", label, str)
        if len(cells) != len(header) - 1:
            raise ValueError(
                f"measured_table: row {label!r} has {len(cells)} cells, "
                f"the header {len(header) - 1} value columns"
            )
        texts = [label] + [_cell(c) for c in cells]
        for j, (cell, text) in enumerate(zip([label, *cells], texts)):
            reserved = cell.width() if isinstance(cell, Measured) else 0
            widths[j] = max(widths[j], len(text) if j == 0 else max(len(text), reserved))
        body.append(texts)
    lines = []
    for texts in [list(header), *body]:
        first = f"{texts[0]:<{widths[0]}}"
        rest = "  ".join(f"{t:>{w}}" for t, w in zip(texts[1:], widths[1:]))
        lines.append(f"{first}  {rest}".rstrip())
    return "\n".join(lines)
