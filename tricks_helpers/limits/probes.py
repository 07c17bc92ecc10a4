"""The probes behind this machine's limits: cache, copy, matmul, Linear (04, 07).

Each ``measure_*`` function times one kernel within a time budget and returns the best rate
it saw (:func:`measure_bandwidth`, :func:`measure_matmul`, :func:`measure_linear`);
:func:`last_level_cache` reads the cache size the bandwidth's buffers are sized from.
:func:`tricks_helpers.limits.measure_limits` runs them all into one
:class:`~tricks_helpers.limits.Limits`.
Nothing is measured on import.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

from tricks_helpers._checks import check_int, check_number, check_type

__all__ = [
    "FALLBACK_CACHE_BYTES",
    "MATMUL_DTYPES",
    "LINEAR_SHAPES",
    "last_level_cache",
    "measure_bandwidth",
    "measure_matmul",
    "measure_linear",
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
