"""Timing, side-by-side comparisons and their verdicts (introduced in chapter 01).

This face hands on the names of its modules, each name with one home:
:mod:`~tricks_helpers.bench.clock` (:func:`device_class`, one synchronised timing),
:mod:`~tricks_helpers.bench.timing` (:func:`measure`, :func:`compare_many`,
:func:`comparison_from_times`), :mod:`~tricks_helpers.bench.pairs` (:func:`compare`),
:mod:`~tricks_helpers.bench.verdicts` (the threshold, the verdict, the number formats),
:mod:`~tricks_helpers.bench.comparisons` (:class:`Measurement`, :class:`Comparison`,
:class:`ManyComparison` and their printed lines), :mod:`~tricks_helpers.bench.tables` (the
book's two tables: :func:`table` of comparisons, :func:`measured_table` of :class:`Measured`
rows), :mod:`~tricks_helpers.bench.summaries` (:func:`tally`, :func:`time_change_text`) and
:mod:`~tricks_helpers.bench.intervals` (the interval of a median and its coverage) and
:mod:`~tricks_helpers.bench.records` (each shown comparison as a JSON record, written only
where ``TRICKS_RECORDS`` names a file; its plumbing, which no chapter calls, is imported from
that module by the scripts that run the book, not handed on here).

The book's rule: **invariants are compared, measurements are judged.** A speed verdict is
itself a measurement: it is shown with its spread and decided by code, but never compared as
text by nbval (the repository's sanitize file masks verdict words and measured digits).

Guarantees:

- every timed call is preceded by warm-up calls, and on CUDA by ``torch.cuda.synchronize()``
  before the clock starts and before it stops;
- :func:`compare` and :func:`compare_many` interleave the candidates round by round (in a new
  seeded random order each round for :func:`compare_many`), so slow drifts of the machine hit
  all of them alike; the speed-up is the **median of the per-round ratios**
  ``baseline time / trick time``;
- its spread and verdict follow the rule of :mod:`tricks_helpers.bench.verdicts` (a
  confidence interval of the median ratio against one threshold, :data:`NOISE_THRESHOLD`);
- the verdict comes first on a short line, e.g.
  ``FASTER 1.22x [1.15-1.31] conv+BN fusion, batch 1 (cpu, 2 threads)``, followed by an
  indented line with the raw times (``~`` marks a measured value);
- robust, large effects can be asserted with loose physical bounds (``at_least=`` /
  ``at_most=`` of :func:`compare`): the comparison is re-measured up to ``attempts`` times and
  fails only when no attempt reaches the bound.
"""

from tricks_helpers.bench.clock import device_class
from tricks_helpers.bench.comparisons import Comparison, ManyComparison, Measurement
from tricks_helpers.bench.intervals import (
    CONFIDENCE,
    coverage_percent,
    interval_coverage,
    median_interval,
)
from tricks_helpers.bench.pairs import compare
from tricks_helpers.bench.summaries import tally, time_change_text
from tricks_helpers.bench.tables import Measured, measured_table, table
from tricks_helpers.bench.timing import compare_many, comparison_from_times, measure
from tricks_helpers.bench.verdicts import (
    DECIDED,
    FASTER,
    NOISE_THRESHOLD,
    SAME,
    SLOWER,
    UNDECIDED,
    VERDICT_LINE_RE,
    VERDICTS,
    decide,
    explains,
    explanation,
    fmt_measured,
    fmt_ratio,
    fmt_time,
)

__all__ = [
    "NOISE_THRESHOLD",
    "CONFIDENCE",
    "FASTER",
    "SLOWER",
    "SAME",
    "UNDECIDED",
    "DECIDED",
    "explains",
    "explanation",
    "VERDICTS",
    "VERDICT_LINE_RE",
    "Measurement",
    "Comparison",
    "ManyComparison",
    "measure",
    "compare",
    "compare_many",
    "comparison_from_times",
    "median_interval",
    "interval_coverage",
    "coverage_percent",
    "decide",
    "device_class",
    "fmt_time",
    "fmt_measured",
    "fmt_ratio",
    "table",
    "Measured",
    "measured_table",
    "tally",
    "time_change_text",
]
