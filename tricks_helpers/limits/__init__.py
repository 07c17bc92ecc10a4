"""This machine's limits: sustained memory bandwidth and matmul throughput per dtype (04, 07).

A speed-up says how much faster a trick is; the limits say how far from the possible it is.
:func:`measure_limits` measures, once, on the threads torch uses at the time of the call and
within a time budget:

- the **memory bandwidth**: a copy between two buffers several times larger than the
  last-level cache (its size read from the machine, :func:`last_level_cache`), counted as the
  bytes read plus the bytes written (as STREAM's copy counts them), best of the repeats;
- the **matmul throughput** per dtype (float32, bfloat16, float16, int8 through
  ``torch._int_mm`` where this build has it): a square matmul, grown from 128 while one call
  stays short, best of the repeats.

Both are what *this* PyTorch reaches here, not a datasheet peak: a kernel at 100% of them is as
fast as this machine runs that operation. :meth:`Limits.lines` prints them as ``[hardware]``
lines (machine facts: the book's sanitize file masks them). Nothing is measured on import.

**One machine, one set of limits** (issue 39). A chapter gets its limits from
:func:`machine_limits`, never by measuring on its own: the book's runner
(``scripts/book/run_notebooks.py``) measures them once per machine (or reads them from the
machine's results file, ``results/<machine-id>.json``, where a run recorded them), hands the
same set to every chapter through the file named by :data:`LIMITS_ENV`, and collects the rate of
every kernel a chapter holds against a limit (:meth:`Limits.raised` appends each to the file
named by :data:`RATES_ENV`): the machine's recorded limit of a dtype is raised to the highest
rate any chapter reached, so a limit is the highest rate observed on the machine, by the probe
or by any chapter's kernel. Without a record (Colab, a plain Jupyter), :func:`machine_limits`
measures and says so on its first ``[hardware]`` line.
"""

from tricks_helpers.limits.machine import LIMITS_ENV, machine_limits, measure_limits
from tricks_helpers.limits.probes import (
    FALLBACK_CACHE_BYTES,
    LINEAR_SHAPES,
    MATMUL_DTYPES,
    last_level_cache,
    measure_bandwidth,
    measure_linear,
    measure_matmul,
)
from tricks_helpers.limits.roofs import PROBE_VERSION, RATES_ENV, Limits

__all__ = [
    "FALLBACK_CACHE_BYTES",
    "MATMUL_DTYPES",
    "LINEAR_SHAPES",
    "LIMITS_ENV",
    "RATES_ENV",
    "PROBE_VERSION",
    "Limits",
    "last_level_cache",
    "measure_bandwidth",
    "measure_matmul",
    "measure_linear",
    "measure_limits",
    "machine_limits",
]
