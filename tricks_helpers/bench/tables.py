"""The book's two text tables, one module: comparisons (:func:`table`) and measured rows
(:func:`measured_table`, :class:`Measured`) (introduced in chapter 01; measured rows in 03-10).

:func:`table` prints comparisons side by side (what, baseline, trick, speed-up [interval],
rounds, covers, verdict); with ``show_why=True`` each row's invariant partner follows on its
own line. :func:`measured_table` prints everything else a chapter measures, one row per label:
a time per item, a throughput, a loss, an accuracy, next to facts (byte counts, dtypes) in the
same row.

Both print measured cells with ``~`` before their digits (and ``±`` before a spread),
right-aligned in columns of fixed width, so the repository's sanitize file masks exactly the
digits (and the padding before them) while labels, units, headers and facts stay compared.
Both live here, on the face of :mod:`tricks_helpers.bench`: a table is how a chapter shows
what ``bench`` measured, and a :class:`Measured` cell is built from a
:class:`~tricks_helpers.bench.comparisons.Measurement`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tricks_helpers._checks import check_bool, check_int, check_number, check_type
from tricks_helpers.bench.comparisons import Comparison, Measurement
from tricks_helpers.bench.intervals import coverage_percent
from tricks_helpers.bench.records import emit, make_record
from tricks_helpers.bench.verdicts import fmt_measured, fmt_time

__all__ = ["table", "Measured", "measured_table"]

_VALUE_WIDTH = 10  # "~-1.23e+05": the longest value fmt_measured prints with 3 digits
_SPREAD_WIDTH = 7  # " ±12%", " ±0.52%", " ±140%" fit; a wider one overflows its row only


def table(
    comparisons: Mapping[str, Comparison] | Iterable[Comparison],
    why: Mapping[str, str] | None = None,
    *,
    show_why: bool = False,
) -> str:
    """A fixed-layout text table of comparisons: what, baseline, trick, speed-up [interval],
    rounds, the interval's coverage (``covers``, from the rounds) and verdict.

    Rows keep the given order; measured cells carry ``~`` and the speed-up its interval, so
    the sanitize file masks exactly those and the verdict words. Each row's invariant partner
    is the ``why=`` given to the comparison's own call (:func:`~tricks_helpers.bench.compare`,
    :meth:`~tricks_helpers.bench.ManyComparison.compare`), or ``why[name]`` where this call
    gives one. Where ``TRICKS_RECORDS`` names a file, each row's record (labelled with the
    row's name, with that partner) is appended to it.

    Args:
        comparisons: ``{row name: comparison}``, or comparisons named by their labels.
        why: partners by row name, overriding the comparisons' own ``why``.
        show_why: also print, under the table, one line per row with its partner
            (``why (the invariant asserted beside each verdict):``) and whether it explains
            the row's verdict (:func:`~tricks_helpers.bench.verdicts.explanation`, from the
            direction given as ``predicts=`` to the comparison's call); every row must have
            a partner.

    Raises:
        TypeError: on a row that is not a :class:`Comparison`, a ``why`` text not a string,
            or a ``show_why`` that is not a bool.
        ValueError: on a ``why`` name that is no row, or with ``show_why``, a row without a
            partner.
    """
    rows = (
        list(comparisons.items())
        if isinstance(comparisons, Mapping)
        else [(c.label, c) for c in comparisons]
    )
    for name, c in rows:
        check_type("table", f"row {name!r}", c, Comparison)
    check_bool("table", "show_why", show_why)
    why = dict(why or {})
    unknown = set(why) - {name for name, _ in rows}
    if unknown:
        raise ValueError(f"table: why names no row: {sorted(unknown)}")
    for name, text in why.items():
        check_type("table", f"why[{name!r}]", text, str)
    partners = {name: why.get(name, c.why) for name, c in rows}
    if show_why:
        missing = [name for name, text in partners.items() if not text]
        if missing:
            raise ValueError(
                f"table: show_why needs a why for every row; none for {missing} "
                "(pass why= to the comparison's call)"
            )
        for name, text in partners.items():
            if "\n" in text:
                raise ValueError(f"table: why[{name!r}] must be one line, got {text!r}")
    for name, c in rows:
        emit(make_record(c, label=name, why=why.get(name)))
    head = ("what", "baseline", "trick", "speed-up [interval]", "rounds", "covers", "verdict")
    body = [
        (
            name,
            fmt_time(c.baseline.median),
            fmt_time(c.trick.median),
            c.speedup_text(),
            c.rounds_text(),
            f"{'~' if c.adaptive else ''}{coverage_percent(c.rounds)}%",
            c.verdict,
        )
        for name, c in rows
    ]
    width = max(len(r[0]) for r in body + [head])
    lines = []
    for name, b, t, s, n, cov, v in [head] + body:
        lines.append(f"{name:<{width}}  {b:>10}  {t:>10}  {s:<24} {n:>6}  {cov:>6}  {v}")
    if show_why:
        lines += ["", "why (the invariant asserted beside each verdict):"]
        named = max(len(name) for name, _ in rows)
        lines += [f"  {name:<{named}}  {partners[name]} {c.explained()}" for name, c in rows]
    return "\n".join(lines)


@dataclass(frozen=True)
class Measured:
    """A measured number for :func:`measured_table`: value, unit, and relative spread.

    Attributes:
        value: the measured value (seconds when ``unit == "time"``: a duration, so not
            negative).
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
        if "\n" in self.unit or "\r" in self.unit:
            raise ValueError(f"Measured: unit must be one line, got {self.unit!r}")
        if self.unit == "time" and self.value < 0:
            raise ValueError(f"Measured: a time is a duration, not negative: got {self.value!r} s")
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
            text = fmt_time(self.value)
        else:
            gap = "" if self.unit in ("", "%") else " "
            text = f"{fmt_measured(self.value, self.digits)}{gap}{self.unit}"
        if self.spread is not None:
            percent = 100 * self.spread
            text += f" ±{percent:.2g}%" if percent < 99.5 else f" ±{percent:.0f}%"
        return text

    def width(self) -> int:
        """The column width this cell reserves, whatever digits it prints."""
        unit = 3 if self.unit == "time" else len(self.unit) + (self.unit not in ("", "%"))
        return _VALUE_WIDTH + unit + (_SPREAD_WIDTH if self.spread is not None else 0)


def _relative_spread(m: Measurement) -> float:
    return m.spread / m.median if m.median > 0 else 0.0


def _one_line(what: str, text: str) -> str:
    if "\n" in text or "\r" in text:
        raise ValueError(f"measured_table: {what} must be one line, got {text!r}")
    return text


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    check_type("measured_table", "cell", value, (Measured, str))
    return _one_line("cells", str(value))


def _row(row: Any) -> tuple[Any, list[Any]]:
    if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
        raise TypeError(
            "measured_table: each row must be a sequence (label, *cells), "
            f"got {type(row).__name__} {row!r}"
        )
    if not row:
        raise ValueError("measured_table: a row must start with its label, got an empty row")
    return row[0], list(row[1:])


def measured_table(
    header: Sequence[str],
    rows: Mapping[str, Sequence[Any]] | Iterable[Sequence[Any]],
) -> str:
    """An aligned text table: a left-aligned label column, then right-aligned value columns.

    Cells may be :class:`Measured` (printed with ``~`` and ``±``, in a column of fixed width so
    the line does not move when the digits change; a value wider than its column, such as a
    spread of ``±1234%`` on a loaded machine, overflows its own row and moves nothing else),
    ``int`` facts (with thousands separators), ``bool`` or ``str`` facts (as given). Rows keep
    their order.

    Args:
        header: the column titles, the label column's first (one line each).
        rows: ``{label: cells}`` or sequences ``(label, *cells)`` (a string is no row); each
            row has ``len(header) - 1`` cells.

    Returns:
        The table's lines joined by newlines (no trailing newline).

    Raises:
        TypeError: on a header or label that is not a string, a row that is not a sequence
            (a string included) or cells that are not one, or a cell of another type.
        ValueError: on fewer than two columns, a row of the wrong length, no rows, or a
            multi-line title, label or cell.
    """
    if isinstance(header, str) or not isinstance(header, Sequence):
        raise TypeError("measured_table: header must be a sequence of column titles")
    for title in header:
        _one_line("column titles", check_type("measured_table", "column title", title, str))
    if len(header) < 2:
        raise ValueError(f"measured_table: needs a label column and a value column, got {header}")
    if isinstance(rows, (str, bytes)):
        raise TypeError(f"measured_table: rows must be a mapping or sequence of rows, got {rows!r}")
    if isinstance(rows, Mapping):
        items = []
        for label, cells in rows.items():
            if isinstance(cells, (str, bytes)) or not isinstance(cells, Sequence):
                raise TypeError(
                    f"measured_table: row {label!r} must be a sequence of cells, "
                    f"got {type(cells).__name__} {cells!r}"
                )
            items.append((label, list(cells)))
    else:
        items = [_row(r) for r in rows]
    if not items:
        raise ValueError("measured_table: no rows")
    body, widths = [], [len(t) for t in header]
    for label, cells in items:
        _one_line("row labels", check_type("measured_table", "row label", label, str))
        if len(cells) != len(header) - 1:
            raise ValueError(
                f"measured_table: row {label!r} has {len(cells)} cells, "
                f"the header {len(header) - 1} value columns"
            )
        texts = [label] + [_cell(c) for c in cells]
        for j, (cell, text) in enumerate(zip([label, *cells], texts)):
            # a measured column's width is what its cells reserve, never what they print: a
            # longer value overflows its own row (whose masked text stays the same), and the
            # header and the other rows keep their places
            widths[j] = max(widths[j], cell.width() if isinstance(cell, Measured) else len(text))
        body.append(texts)
    lines = []
    for texts in [list(header), *body]:
        first = f"{texts[0]:<{widths[0]}}"
        rest = "  ".join(f"{t:>{w}}" for t, w in zip(texts[1:], widths[1:]))
        lines.append(f"{first}  {rest}".rstrip())
    return "\n".join(lines)
