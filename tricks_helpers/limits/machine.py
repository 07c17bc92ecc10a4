"""One machine, one set of limits: measured here or handed by the runner (04, 07).

:func:`measure_limits` runs the probes (:mod:`tricks_helpers.limits.probes`) within a budget;
:func:`machine_limits`, which every chapter calls, returns the set the book's runner recorded
for this machine where :data:`LIMITS_ENV` names its file, and measures otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import torch

from tricks_helpers._checks import check_number, check_type
from tricks_helpers.limits.probes import (
    MATMUL_DTYPES,
    last_level_cache,
    measure_bandwidth,
    measure_linear,
    measure_matmul,
)
from tricks_helpers.limits.roofs import Limits

__all__ = ["LIMITS_ENV", "measure_limits", "machine_limits"]

#: the file holding this machine's recorded limits (:meth:`Limits.record`), set by the runner
LIMITS_ENV = "TRICKS_LIMITS"


def measure_limits(
    dtypes: Iterable[str] = tuple(MATMUL_DTYPES),
    *,
    budget_s: float = 6.0,
    sysfs: str | Path = "/sys/devices/system/cpu/cpu0/cache",
) -> Limits:
    """Measure this CPU's bandwidth and matmul limits within about ``budget_s`` seconds.

    A fifth of the budget goes to the bandwidth (buffers of 4x the last-level cache, at
    least 32 MiB), the rest is shared by the dtypes. Each dtype's limit is the faster of the
    book's two paths: a square ``mm`` (:func:`measure_matmul`) and a ``Linear`` layer at the
    book's shapes (:func:`measure_linear`: oneDNN for 16-bit, FBGEMM's dynamic int8);
    :attr:`Limits.where` names the one that reached it. A dtype this build cannot multiply is
    listed in :attr:`Limits.skipped` with the reason.

    Raises:
        TypeError: on a dtype name that is not a string; ValueError: on an unknown name, no
            names, or a non-positive budget.
    """
    names = list(dtypes) if not isinstance(dtypes, str) else [dtypes]
    for name in names:
        check_type("measure_limits", "dtype name", name, str)
        if name not in MATMUL_DTYPES:
            raise ValueError(
                f"measure_limits: unknown dtype {name!r}; choose from {list(MATMUL_DTYPES)}"
            )
    if not names:
        raise ValueError("measure_limits: no dtypes to measure")
    budget_s = check_number(
        "measure_limits", "budget_s", budget_s, minimum=0.0, strict_minimum=True
    )
    cache, source = last_level_cache(sysfs)
    buffer_bytes = max(4 * cache, 32 * 2**20)
    bandwidth = measure_bandwidth(buffer_bytes, budget_s=budget_s / 5)
    rates, sizes, skipped, where = {}, {}, {}, {}
    share = 0.8 * budget_s / len(names)
    for name in names:
        try:
            rates[name], sizes[name] = measure_matmul(MATMUL_DTYPES[name], budget_s=share / 2)
        except RuntimeError as err:
            skipped[name] = str(err).splitlines()[0][:80]
            continue
        where[name] = f"mm {sizes[name]}^3"
        try:
            rate, shape = measure_linear(MATMUL_DTYPES[name], budget_s=share / 2)
        except RuntimeError:
            continue  # the mm's rate stands
        if rate > rates[name]:
            rates[name], where[name] = rate, shape
    return Limits(
        torch.get_num_threads(),
        cache,
        source,
        buffer_bytes,
        bandwidth,
        rates,
        sizes,
        skipped,
        where=where,
    )


def machine_limits(
    dtypes: Iterable[str] = tuple(MATMUL_DTYPES),
    *,
    budget_s: float = 6.0,
    environ: Mapping[str, str] | None = None,
) -> Limits:
    """This machine's one set of limits: the recorded set where the runner hands one, else measured.

    Every chapter calls this (never :func:`measure_limits` itself), so that one machine prints
    one set of limits (issue 39). Under the book's runner :data:`LIMITS_ENV` names a file
    holding the machine's recorded limits (:meth:`Limits.record`, plus the results file they
    come from): those of ``dtypes`` are returned (``budget_s`` is unused). Otherwise (Colab, a
    plain Jupyter, nbval) the limits of ``dtypes`` are measured (:func:`measure_limits`). Both
    print the same lines, with numbers (:meth:`Limits.lines`, masked as machine facts); the
    first says which.

    Raises:
        ValueError: a recorded-limits file that cannot be read or holds no valid limits (named).
    """
    environ = os.environ if environ is None else environ
    target = environ.get(LIMITS_ENV)
    if not target:
        lim = measure_limits(dtypes, budget_s=budget_s)
        return replace(lim, origin="measured by this page (no limits recorded for this machine)")
    try:
        data = json.loads(Path(target).read_text(encoding="utf-8"))
        check_type("machine_limits", "recorded limits", data, dict)
        lim = Limits.from_record(data["limits"], f"recorded for this machine ({data['file']})")
        names = list(dtypes) if not isinstance(dtypes, str) else [dtypes]
        lim = replace(
            lim,
            matmul={k: v for k, v in lim.matmul.items() if k in names},
            matmul_size={k: v for k, v in lim.matmul_size.items() if k in names},
            skipped={k: v for k, v in lim.skipped.items() if k in names},
            where={k: v for k, v in lim.where.items() if k in names},
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"machine_limits: the recorded limits in {target} are unusable: {exc}"
        ) from exc
    return lim
