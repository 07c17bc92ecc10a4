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

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from tricks_helpers._checks import check_int, check_number, check_type
from tricks_helpers.bench.verdicts import fmt_measured

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

#: assumed last-level cache where the machine does not say (a large server L3)
FALLBACK_CACHE_BYTES = 32 * 2**20
#: dtype name -> torch dtype, in the order :func:`measure_limits` measures them
MATMUL_DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "int8": torch.int8,
}
#: ``(rows, in, out)`` of the ``Linear`` layers the book times (07's block h -> 4h at batch 1
#: and 64, 04's w x w layers at 128 rows), probed through the book's fastest path per dtype:
#: ``F.linear`` (oneDNN for 16-bit) and, for int8, the dynamically quantized ``Linear`` (FBGEMM).
LINEAR_SHAPES = (
    (1, 1024, 4096),
    (64, 512, 2048),
    (64, 1024, 4096),
    (128, 1024, 1024),
    (128, 2048, 2048),
)
#: the file holding this machine's recorded limits (:meth:`Limits.record`), set by the runner
LIMITS_ENV = "TRICKS_LIMITS"
#: the file a chapter appends the rates it holds against its limits to (JSON lines), runner-set
RATES_ENV = "TRICKS_RATES"
#: what :func:`measure_limits` measures; a recorded set of another version is measured again
PROBE_VERSION = 2
_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def _parse_size(text: str) -> int:
    """``"8192K"`` -> 8388608; raises ValueError on anything else (``"0K"`` included: a cache
    of no bytes is no cache)."""
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = text[-1] if text and text[-1] in "KMG" else ""
    number = text[: len(text) - len(unit)].strip()
    if not number.isdigit() or int(number) == 0:
        raise ValueError(f"not a cache size: {text!r}")
    return int(number) * _SIZE_UNITS[unit]


def last_level_cache(
    sysfs: str | Path = "/sys/devices/system/cpu/cpu0/cache",
) -> tuple[int, str]:
    """The size of the largest-level data/unified cache of CPU 0, and where it was read.

    Args:
        sysfs: the cache folder of one CPU (``index*/level``, ``type``, ``size``).

    Returns:
        ``(bytes, source)``: ``source`` names the file read (e.g. ``"sysfs L3"``), or says
        ``"fallback"`` where no readable entry exists (then ``bytes`` is
        :data:`FALLBACK_CACHE_BYTES`). An entry of 0 bytes, or one that is not a size, is not
        readable: ``bytes`` is always positive.
    """
    best: tuple[int, int] | None = None  # (level, bytes)
    for index in sorted(Path(sysfs).glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = _parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if best is None or level > best[0]:
            best = (level, size)
    if best is None:
        return FALLBACK_CACHE_BYTES, "fallback (no cache sizes readable)"
    return best[1], f"sysfs L{best[0]}"


def _best_seconds(fn: Callable[[], Any], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    if not best > 0:
        raise RuntimeError("the clock did not advance during a timing")
    return best


def _repeats_within(one_call_s: float, budget_s: float, most: int = 20) -> int:
    return max(2, min(most, int(budget_s / max(one_call_s, 1e-9))))


def measure_bandwidth(buffer_bytes: int, *, budget_s: float = 0.5) -> float:
    """Sustained copy bandwidth in bytes/s: ``dst.copy_(src)`` of two ``buffer_bytes`` buffers.

    Each copy counts ``2 * buffer_bytes`` (read plus write); the best of the repeats that fit
    in ``budget_s`` (at least 2, after one untimed copy) is returned.

    Raises:
        TypeError, ValueError: on a non-integer or too small buffer, or a non-positive budget.
    """
    buffer_bytes = check_int("measure_bandwidth", "buffer_bytes", buffer_bytes, minimum=2**16)
    budget_s = check_number(
        "measure_bandwidth", "budget_s", budget_s, minimum=0.0, strict_minimum=True
    )
    n = buffer_bytes // 4
    src = torch.ones(n, dtype=torch.float32)
    dst = torch.empty_like(src)
    first = _best_seconds(lambda: dst.copy_(src), 1)  # also faults the pages in
    seconds = _best_seconds(lambda: dst.copy_(src), _repeats_within(first, budget_s))
    return 2 * 4 * n / seconds


def _matmul_call(dtype: torch.dtype, n: int) -> Callable[[], Any]:
    gen = torch.Generator().manual_seed(n)
    if dtype == torch.int8:
        a = torch.randint(-64, 64, (n, n), dtype=torch.int8, generator=gen)
        b = torch.randint(-64, 64, (n, n), dtype=torch.int8, generator=gen)
        torch._int_mm(a, b)  # raises where this build has no int8 matmul
        return lambda: torch._int_mm(a, b)
    a = torch.randn(n, n, generator=gen).to(dtype)
    b = torch.randn(n, n, generator=gen).to(dtype)
    return lambda: torch.mm(a, b)


def measure_matmul(
    dtype: torch.dtype, *, budget_s: float = 0.5, max_size: int = 2048
) -> tuple[float, int]:
    """Best matmul throughput of ``dtype`` on the CPU, in operations (FLOPs) per second.

    A square ``n x n @ n x n`` matmul (``2 n^3`` operations), ``n`` doubled from 128 while
    one call takes under a quarter of ``budget_s`` and ``n < max_size``; then the best of
    the repeats that fit in the rest of the budget. The result is the fastest rate seen at
    any size tried (an emulated 16-bit matmul can be faster at 256 than at 1024), so a
    ``torch.matmul`` of that dtype at those sizes does not exceed it (up to noise). It is
    that kernel's ceiling, not the machine's: another kernel (a quantized ``Linear``,
    oneDNN's bf16 path) can run faster. Emulated 16-bit math stays at small ``n`` (seconds
    per call at 1024 on an AVX2-only CPU) and is measured there.

    Returns:
        ``(operations per second, n)``: the best rate and the size it was reached at.

    Raises:
        TypeError: on a non-dtype ``dtype``; ValueError: on a dtype not in
            :data:`MATMUL_DTYPES`, a non-positive budget or ``max_size`` below 128.
        RuntimeError: where this build cannot multiply ``dtype`` (int8 without ``_int_mm``).
    """
    check_type("measure_matmul", "dtype", dtype, torch.dtype)
    if dtype not in MATMUL_DTYPES.values():
        raise ValueError(f"measure_matmul: dtype must be one of {list(MATMUL_DTYPES)}, got {dtype}")
    budget_s = check_number(
        "measure_matmul", "budget_s", budget_s, minimum=0.0, strict_minimum=True
    )
    max_size = check_int("measure_matmul", "max_size", max_size, minimum=128)
    start = time.perf_counter()
    n = 128
    call = _matmul_call(dtype, n)
    one = _best_seconds(call, 2)
    best = (2 * n**3 / one, n)
    while one < budget_s / 4 and 2 * n <= max_size:
        n *= 2
        call = _matmul_call(dtype, n)
        one = _best_seconds(call, 1)
        best = max(best, (2 * n**3 / one, n))
    left = max(budget_s - (time.perf_counter() - start), one)
    seconds = _best_seconds(call, _repeats_within(one, left))
    return max(best, (2 * n**3 / seconds, n))


def _linear_call(dtype: torch.dtype, rows: int, k: int, n: int) -> Callable[[], Any]:
    gen = torch.Generator().manual_seed(k)
    x = torch.randn(rows, k, generator=gen)
    layer = torch.nn.Linear(k, n, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(n, k, generator=gen) / k**0.5)
    if dtype == torch.int8:
        with warnings.catch_warnings():  # quantize_dynamic's deprecation notice
            warnings.simplefilter("ignore")
            layer = torch.ao.quantization.quantize_dynamic(
                torch.nn.Sequential(layer), {torch.nn.Linear}, dtype=torch.qint8
            )
    else:
        layer, x = layer.to(dtype), x.to(dtype)

    def call() -> Any:
        with torch.no_grad():
            return layer(x)

    call()  # raises where this build cannot run it
    return call


def measure_linear(
    dtype: torch.dtype,
    *,
    budget_s: float = 0.5,
    shapes: Iterable[tuple[int, int, int]] = LINEAR_SHAPES,
) -> tuple[float, str]:
    """Best throughput of a ``Linear`` layer of ``dtype`` at the book's shapes, operations/s.

    ``rows x in -> out`` (``2 rows in out`` operations) for each of ``shapes``, in order,
    while one call takes under a quarter of ``budget_s``; each shape gets an equal share of
    the budget. int8 is the dynamically quantized ``Linear`` (FBGEMM, float32 in and out,
    as chapter 07 times it); 16-bit dtypes are ``F.linear`` on 16-bit operands (oneDNN).

    Returns:
        ``(operations per second, shape text)``, e.g. ``(3.2e11, "Linear 64x1024->4096")``.

    Raises:
        TypeError, ValueError: as :func:`measure_matmul`; RuntimeError: where this build
            cannot run the layer.
    """
    check_type("measure_linear", "dtype", dtype, torch.dtype)
    if dtype not in MATMUL_DTYPES.values():
        raise ValueError(f"measure_linear: dtype must be one of {list(MATMUL_DTYPES)}, got {dtype}")
    budget_s = check_number(
        "measure_linear", "budget_s", budget_s, minimum=0.0, strict_minimum=True
    )
    shapes = [tuple(check_int("measure_linear", "shape", v, minimum=1) for v in s) for s in shapes]
    if not shapes:
        raise ValueError("measure_linear: no shapes")
    best = (0.0, "")
    for rows, k, n in shapes:
        call = _linear_call(dtype, rows, k, n)
        one = _best_seconds(call, 1)
        seconds = _best_seconds(call, _repeats_within(one, budget_s / len(shapes)))
        best = max(best, (2 * rows * k * n / seconds, f"Linear {rows}x{k}->{n}"))
        if one > budget_s / 4:
            break
    return best


@dataclass(frozen=True)
class Limits:
    """This machine's measured limits (see the module docstring for how they are measured).

    Attributes:
        threads: torch's intra-op threads while measuring.
        cache_bytes: the last-level cache size, and ``cache_source`` where it was read.
        buffer_bytes: the size of each buffer of the bandwidth copy.
        bandwidth: copy bandwidth, bytes/s.
        matmul: dtype name -> operations per second (FLOP/s; int8: integer ops/s).
        matmul_size: dtype name -> ``n`` of the square matmul measured.
        skipped: dtype name -> why it was not measured.
        raised_by: limit name (``"bandwidth"`` or a dtype) -> what raised it above the probe's
            rate (see :meth:`raised`): a roof is the highest rate this machine reached.
        where: dtype name -> the kernel and shape that reached its limit (``"mm 1024^3"``,
            ``"Linear 64x1024->4096"``, ``"07_quantization"``); without it the square size.
        origin: where these limits come from, for the first ``[hardware]`` line
            (:func:`machine_limits`: recorded for this machine, or measured by this page).
    """

    threads: int
    cache_bytes: int
    cache_source: str
    buffer_bytes: int
    bandwidth: float
    matmul: Mapping[str, float]
    matmul_size: Mapping[str, int]
    skipped: Mapping[str, str] = field(default_factory=dict)
    raised_by: Mapping[str, str] = field(default_factory=dict)
    where: Mapping[str, str] = field(default_factory=dict)
    origin: str = "measured"

    def __post_init__(self) -> None:
        """Refuse limits no measurement can give: the ratios below divide by them.

        Raises:
            TypeError: a field of the wrong type.
            ValueError: a count, size, bandwidth or rate that is not positive and finite.
        """
        where = "Limits"
        check_int(where, "threads", self.threads, minimum=1)
        check_int(where, "cache_bytes", self.cache_bytes, minimum=1)
        check_type(where, "cache_source", self.cache_source, str)
        check_int(where, "buffer_bytes", self.buffer_bytes, minimum=1)
        check_number(where, "bandwidth", self.bandwidth, minimum=0.0, strict_minimum=True)
        for name, rate in dict(self.matmul).items():
            check_number(where, f"matmul[{name!r}]", rate, minimum=0.0, strict_minimum=True)
        for name, n in dict(self.matmul_size).items():
            check_int(where, f"matmul_size[{name!r}]", n, minimum=1)

    def percent_of_bandwidth(self, nbytes: float, seconds: float) -> float:
        """Achieved bandwidth of moving ``nbytes`` in ``seconds``, in % of :attr:`bandwidth`."""
        nbytes = check_number("percent_of_bandwidth", "nbytes", nbytes, minimum=0.0)
        seconds = check_number(
            "percent_of_bandwidth", "seconds", seconds, minimum=0.0, strict_minimum=True
        )
        return 100 * nbytes / seconds / self.bandwidth

    def percent_of_matmul(self, dtype: str, operations: float, seconds: float) -> float:
        """Achieved throughput of ``operations`` in ``seconds``, in % of ``dtype``'s limit.

        Raises:
            ValueError: on a dtype that was not measured, or a non-positive time.
        """
        if dtype not in self.matmul:
            raise ValueError(
                f"percent_of_matmul: no measured limit for {dtype!r}; have {list(self.matmul)}"
            )
        operations = check_number("percent_of_matmul", "operations", operations, minimum=0.0)
        seconds = check_number(
            "percent_of_matmul", "seconds", seconds, minimum=0.0, strict_minimum=True
        )
        return 100 * operations / seconds / self.matmul[dtype]

    def lines(self) -> list[str]:
        """The limits as ``[hardware]`` lines (machine facts, masked by the sanitize file)."""
        out = [
            f"[hardware] limits on {self.threads} thread(s), {self.origin}; last-level cache "
            f"{self.cache_bytes / 2**20:g} MiB ({self.cache_source})",
            f"[hardware] memory bandwidth (copy, 2 buffers of {self.buffer_bytes / 2**20:g} MiB): "
            f"{fmt_measured(self.bandwidth / 1e9)} GB/s",
        ]
        for name, rate in self.matmul.items():
            unit = "GOP/s" if name == "int8" else "GFLOP/s"
            n = self.matmul_size.get(name, 0)
            shape = self.where.get(name) or f"{n}x{n}x{n}"
            out.append(f"[hardware] matmul {name} ({shape}): {fmt_measured(rate / 1e9)} {unit}")
        out += [
            f"[hardware] matmul {name}: not measured ({why})" for name, why in self.skipped.items()
        ]
        out += [
            f"[hardware] {name} limit raised to the rate of {source} (faster than the probe)"
            for name, source in self.raised_by.items()
        ]
        return out

    def raised(
        self,
        source: str,
        *,
        bandwidth: float | None = None,
        matmul: Mapping[str, float] | None = None,
    ) -> Limits:
        """These limits with each one raised to a rate the page measured, where that is higher.

        A limit is an upper bound: the highest rate this machine reached for that dtype, over
        the probe's sizes **and** every kernel the page times (chapter 07's bf16 ``Linear``
        beat the 128^3 probe 5x). Pass the page's rates; a limit a rate beats becomes that
        rate, and :attr:`raised_by` names ``source`` for it (a ``[hardware]`` line says so).
        Rates at or below a limit change nothing. After this, no rate passed here is above
        its limit (no point above its roof).

        Args:
            source: what the rates are, for the line (``"the transformer block"``).
            bandwidth: an achieved bandwidth, bytes/s.
            matmul: dtype name -> achieved operations/s.

        Raises:
            TypeError: on a non-mapping ``matmul``; ValueError: on a non-positive rate or a
                dtype with no measured limit.
        """
        check_type("Limits.raised", "source", source, str)
        new_bw, new_mm = self.bandwidth, dict(self.matmul)
        raised_by = dict(self.raised_by)
        if bandwidth is not None:
            rate = check_number(
                "Limits.raised", "bandwidth", bandwidth, minimum=0.0, strict_minimum=True
            )
            if rate > new_bw:
                new_bw, raised_by["bandwidth"] = rate, source
        check_type("Limits.raised", "matmul", matmul or {}, Mapping)
        for name, rate in (matmul or {}).items():
            if name not in new_mm:
                raise ValueError(
                    f"Limits.raised: no measured limit for {name!r}; have {list(new_mm)}"
                )
            rate = check_number(
                "Limits.raised", f"matmul {name!r}", rate, minimum=0.0, strict_minimum=True
            )
            if rate > new_mm[name]:
                new_mm[name], raised_by[name] = rate, source
        _append_rates(source, bandwidth, matmul or {})
        return replace(self, bandwidth=new_bw, matmul=new_mm, raised_by=raised_by)

    def record(self) -> dict[str, Any]:
        """What a results file stores of these limits (``limits`` of ``results/<id>.json``):
        ``threads``, ``cache_bytes``, ``bandwidth`` (bytes/s), ``matmul`` (operations/s),
        ``skipped``, ``probe`` (:data:`PROBE_VERSION`) and ``where`` (dtype -> kernel)."""
        where = {k: self.where.get(k) or f"mm {v}^3" for k, v in self.matmul_size.items()}
        return {
            "threads": self.threads,
            "cache_bytes": self.cache_bytes,
            "bandwidth": float(self.bandwidth),
            "matmul": {k: float(v) for k, v in self.matmul.items()},
            "skipped": dict(self.skipped),
            "probe": PROBE_VERSION,
            "where": {k: where.get(k, "") for k in self.matmul},
        }

    @classmethod
    def from_record(cls, data: Mapping[str, Any], origin: str = "recorded") -> Limits:
        """The limits a results file recorded (:meth:`record`), as :class:`Limits`.

        Raises:
            TypeError, ValueError: on a record that lacks a field or holds a bad value.
        """
        check_type("Limits.from_record", "record", data, Mapping)
        missing = {"threads", "cache_bytes", "bandwidth", "matmul", "skipped"} - set(data)
        if missing:
            raise ValueError(f"Limits.from_record: the record lacks {sorted(missing)}")
        check_type("Limits.from_record", "matmul", data["matmul"], Mapping)
        where = dict(data.get("where") or {})
        return cls(
            threads=data["threads"],
            cache_bytes=data["cache_bytes"],
            cache_source="recorded",
            buffer_bytes=max(4 * data["cache_bytes"], 32 * 2**20),
            bandwidth=data["bandwidth"],
            matmul=dict(data["matmul"]),
            matmul_size={k: 1 for k in data["matmul"]},
            skipped=dict(data["skipped"]),
            where={k: where.get(k) or "recorded" for k in data["matmul"]},
            origin=origin,
        )


def _append_rates(source: str, bandwidth: float | None, matmul: Mapping[str, float]) -> None:
    """Append the rates a chapter reached to :data:`RATES_ENV`'s file (nothing when unset)."""
    target = os.environ.get(RATES_ENV)
    if not target:
        return
    from tricks_helpers.bench.records import CHAPTER_ENV

    chapter = os.environ.get(CHAPTER_ENV) or "unknown"
    rates = {**({"bandwidth": bandwidth} if bandwidth is not None else {}), **dict(matmul)}
    with open(target, "a", encoding="utf-8") as out:
        for name, rate in rates.items():
            line = {"chapter": chapter, "name": name, "rate": float(rate), "source": source}
            out.write(json.dumps(line) + "\n")


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
