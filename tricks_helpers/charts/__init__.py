"""The book's charts: speed-ups with their intervals (chapters 04-07, results), and rooflines.

Every measured speed-up in the book is drawn the same way: one row per comparison, the median
per-round ratio as a marker, its confidence interval as an error bar, on a log axis (2x faster
and 2x slower are equally far from 1), with 1.0 drawn solid and the noise threshold and its
inverse dashed, so a reader sees the verdict rule (:func:`tricks_helpers.bench.verdicts.decide`)
beside the data. A figure's image is not compared by nbval (a page prints or asserts every
claim a chart shows); its text form is.

The modules (a chapter imports ``charts`` and uses the names below):

- :mod:`~tricks_helpers.charts.speedup`: :func:`speedup_chart`, :func:`speedup_rows`,
  :class:`SpeedupRow`, :data:`VERDICT_STYLE`, :data:`SERIES_STYLES` (chapters 04-07, results)
- :mod:`~tricks_helpers.charts.roofline`: :func:`roofline_chart` (chapters 04, 07)
- :mod:`~tricks_helpers.charts.fit`: :func:`fit_inside`, a label cut to fit its axes
"""

from tricks_helpers.charts.fit import fit_inside
from tricks_helpers.charts.roofline import roofline_chart
from tricks_helpers.charts.speedup import (
    SERIES_STYLES,
    VERDICT_STYLE,
    SpeedupRow,
    speedup_chart,
    speedup_rows,
)

__all__ = [
    "SpeedupRow",
    "speedup_rows",
    "speedup_chart",
    "VERDICT_STYLE",
    "SERIES_STYLES",
    "roofline_chart",
    "fit_inside",
]
