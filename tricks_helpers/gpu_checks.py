"""Invariants that decide GPU-only claims: copies overlapped, kernels chosen, cuBLAS checks.

A speed claim that only a GPU can show (pinned memory with ``non_blocking`` copies, a CUDA-stream
prefetcher, tensor cores for multiples of 8, ``CUBLAS_WORKSPACE_CONFIG``) is decided on the GPU
branch of a chapter by a fact of the run, beside a loose speed bound:

- :func:`overlapped_copies` counts host-to-device copies that ran while a kernel ran on another
  stream, from the spans of a profiler trace (:func:`tricks_helpers.traces.trace_spans` with
  ``category=None``): overlap is what ``pin_memory=True`` + ``non_blocking=True`` and a prefetcher
  buy (chapter 03); it depends on timing, so the claim is decided by
  :func:`copies_on_side_streams`, the copies issued on a stream that runs no kernel (what a
  prefetcher does by construction, on every batch);
- :func:`tensor_core_kernels` picks the kernels whose names say they use tensor cores
  (:func:`is_tensor_core_kernel`), :func:`kernel_names` all kernels a run launched (04);
- :func:`allocator_actions` and :func:`allocated_timeline` read a CUDA memory snapshot
  (``torch.cuda.memory._snapshot()`` after ``_record_memory_history()``): which actions the
  caching allocator took (``segment_free`` is memory returned to the driver) and the bytes
  allocated after each (05);
- :func:`cublas_product_without_workspace_config` runs a matrix product twice under
  deterministic mode in a fresh process without ``CUBLAS_WORKSPACE_CONFIG`` (02).

The pure functions are tested on the CPU with made-up spans. Importing this module changes no
global state.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from tricks_helpers._checks import check_callable, check_choice, check_int, check_type
from tricks_helpers.memory.peaks import without_profiler_backend_lines
from tricks_helpers.traces import TraceSpan, trace_spans

__all__ = [
    "COPY_CATEGORY",
    "KERNEL_CATEGORY",
    "TENSOR_CORE_MARKERS",
    "overlapped_copies",
    "copies_on_side_streams",
    "copy_kinds",
    "profile_spans",
    "tensor_core_kernels",
    "is_tensor_core_kernel",
    "kernel_names",
    "allocator_actions",
    "allocated_timeline",
    "cublas_product_without_workspace_config",
]

#: The trace category of CUDA memory copies and of CUDA kernels (Kineto's names).
COPY_CATEGORY = "gpu_memcpy"
KERNEL_CATEGORY = "kernel"

#: Tokens of cuBLAS/CUTLASS kernel names that mean tensor-core (MMA) instructions by
#: themselves: the MMA shapes with their type letter, ``h884``/``s884`` (Volta),
#: ``h1688``/``s1688``/``i8816`` (Turing), ``h16816``/``s16816``/``i16832`` (Ampere), matched
#: with no digit beside them (a bare ``884`` can be part of any number); ``hmma``/``imma``/
#: ``tensorop``; ``gmma``/``wgmma`` (Hopper). A name heuristic: the cell prints the names.
TENSOR_CORE_MARKERS = (
    "h884",
    "s884",
    "h1688",
    "s1688",
    "i8816",
    "h16816",
    "s16816",
    "i16832",
    "hmma",
    "imma",
    "tensorop",
    "gmma",
)
_SHAPES = [m for m in TENSOR_CORE_MARKERS if m[1:].isdigit()]
_TENSOR_CORE_TOKEN = re.compile(
    "|".join([rf"(?<![0-9]){m}(?![0-9])" for m in _SHAPES])
    + "|"
    + "|".join(m for m in TENSOR_CORE_MARKERS if m not in _SHAPES)
)
#: Kernel families with float32 (SIMT) members too: ``xmma`` (cuBLAS/CUTLASS) and ``nvjet``
#: (cuBLAS's generated GEMMs, Hopper and later) count only with a tensor-core input type in
#: the name (``f16``, ``bf16``, ``tf32``, ``e4m3``/``e5m2``, ``i8``/``s8``, or nvjet's type
#: code starting ``h``/``b``/``t``/``e``): ``sm80_xmma_gemm_f32f32_f32f32_f32...`` does not.
_FAMILY = re.compile(r"xmma|nvjet")
_TENSOR_CORE_TYPE = re.compile(r"bf16|f16|tf32|e4m3|e5m2|i8|s8|nvjet_[hbte]")


def _check_spans(where: str, spans: object) -> Sequence[TraceSpan]:
    check_type(where, "spans", spans, (list, tuple))
    for span in spans:  # type: ignore[union-attr]
        check_type(where, "spans[...]", span, TraceSpan)
    return spans  # type: ignore[return-value]


def _copies(where: str, spans: Sequence[TraceSpan], direction: str) -> list[TraceSpan]:
    """The copies of ``direction`` among ``spans``, after checking both arguments."""
    _check_spans(where, spans)
    check_choice(where, "direction", direction, ("HtoD", "DtoH", "DtoD"))
    return [s for s in spans if s.category == COPY_CATEGORY and direction in s.name]


def overlapped_copies(spans: Sequence[TraceSpan], direction: str = "HtoD") -> tuple[int, int]:
    """How many copies of ``direction`` overlapped a kernel on another stream (chapter 03).

    Args:
        spans: the complete events of a CUDA profiler trace (``trace_spans(path,
            category=None)``); GPU events carry the stream as their ``thread``.
        direction: ``"HtoD"`` (host to device), ``"DtoH"`` or ``"DtoD"``: the copies counted
            are the spans of category :data:`COPY_CATEGORY` whose name holds it.

    Returns:
        ``(overlapped, copies)``: copies whose time interval intersects a kernel's on a
        different stream, and all copies of that direction. A copy cannot overlap compute on
        its own stream, so ``overlapped > 0`` proves copy/compute concurrency.

    Raises:
        TypeError: on spans that are not :class:`~tricks_helpers.traces.TraceSpan` rows.
        ValueError: on an unknown direction.
    """
    copies = _copies("overlapped_copies", spans, direction)
    kernels = [s for s in spans if s.category == KERNEL_CATEGORY]
    overlapped = 0
    for c in copies:
        c_end = c.start_us + c.duration_us
        if any(
            k.thread != c.thread and k.start_us < c_end and c.start_us < k.start_us + k.duration_us
            for k in kernels
        ):
            overlapped += 1
    return overlapped, len(copies)


def copies_on_side_streams(spans: Sequence[TraceSpan], direction: str = "HtoD") -> tuple[int, int]:
    """How many copies of ``direction`` ran on a stream on which no kernel ran (chapter 03).

    Such a copy was issued beside the computation, so the GPU may run it during a kernel:
    a prefetcher issues every copy that way, by construction, whereas copies issued on the
    stream that computes wait for its kernels. This is the invariant of the prefetcher claim;
    whether a copy then did overlap a kernel (:func:`overlapped_copies`) depends on how long
    each took, so it is shown, not asserted.

    Args:
        spans: as :func:`overlapped_copies`.
        direction: as :func:`overlapped_copies`.

    Returns:
        ``(on_side_streams, copies)``.

    Raises:
        TypeError: on spans that are not :class:`~tricks_helpers.traces.TraceSpan` rows.
        ValueError: on an unknown direction.
    """
    copies = _copies("copies_on_side_streams", spans, direction)
    computing = {s.thread for s in spans if s.category == KERNEL_CATEGORY}
    return sum(c.thread not in computing for c in copies), len(copies)


def copy_kinds(spans: Sequence[TraceSpan]) -> Counter[str]:
    """Copies counted by name, e.g. ``{"Memcpy HtoD (Pinned -> Device)": 8}`` (chapter 03).

    The name says where a host-to-device copy read from: ``Pageable`` memory (staged through a
    pinned buffer by the driver, so the host waits) or ``Pinned`` memory (``pin_memory=True``:
    the copy can run asynchronously).

    Raises:
        TypeError: on spans that are not :class:`~tricks_helpers.traces.TraceSpan` rows.
    """
    _check_spans("copy_kinds", spans)
    return Counter(s.name for s in spans if s.category == COPY_CATEGORY)


def profile_spans(fn: Callable[[], Any], path: str | os.PathLike | None = None) -> list[TraceSpan]:
    """Run ``fn()`` under the profiler (CPU, and CUDA where present) and return every span.

    Args:
        fn: the work to record.
        path: where to write the Chrome trace (default: a temporary file, removed after).

    Returns:
        ``trace_spans(trace, category=None)``: CPU operators, and on CUDA the kernels
        (:data:`KERNEL_CATEGORY`) and copies (:data:`COPY_CATEGORY`) with their stream.

    Raises:
        TypeError: when ``fn`` is not callable.
    """
    check_callable("profile_spans", "fn", fn)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with without_profiler_backend_lines(), torch.profiler.profile(activities=activities) as prof:
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    if path is not None:
        prof.export_chrome_trace(str(path))
        return trace_spans(path, category=None)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        return trace_spans(trace, category=None)


def is_tensor_core_kernel(name: str) -> bool:
    """True when a kernel's name says it runs tensor-core (MMA) instructions (chapter 04).

    A :data:`TENSOR_CORE_MARKERS` token (shapes with no digit beside them), or a kernel of the
    ``xmma``/``nvjet`` families that names a tensor-core input type (their float32 kernels
    do not count). Case is ignored.

    Raises:
        TypeError: when ``name`` is not a string.
    """
    check_type("is_tensor_core_kernel", "name", name, str)
    low = name.lower()
    if _TENSOR_CORE_TOKEN.search(low):
        return True
    return bool(_FAMILY.search(low) and _TENSOR_CORE_TYPE.search(low))


def kernel_names(spans: Sequence[TraceSpan]) -> list[str]:
    """The distinct names of the kernels in ``spans``, sorted (chapter 04: which kernels
    cuBLAS chose for a shape, to compare two shapes).

    Raises:
        TypeError: on spans that are not :class:`~tricks_helpers.traces.TraceSpan` rows.
    """
    _check_spans("kernel_names", spans)
    return sorted({s.name for s in spans if s.category == KERNEL_CATEGORY})


def tensor_core_kernels(spans: Sequence[TraceSpan]) -> list[str]:
    """The distinct kernel names of ``spans`` that :func:`is_tensor_core_kernel` accepts.

    Raises:
        TypeError: on spans that are not :class:`~tricks_helpers.traces.TraceSpan` rows.
    """
    _check_spans("tensor_core_kernels", spans)
    return [n for n in kernel_names(spans) if is_tensor_core_kernel(n)]


def _device_trace(where: str, snapshot: Any, device: int) -> list[dict[str, Any]]:
    check_type(where, "snapshot", snapshot, dict)
    check_int(where, "device", device, minimum=0)
    traces = snapshot.get("device_traces")
    if not isinstance(traces, list) or device >= len(traces):
        raise ValueError(f"{where}: the snapshot has no device_traces for device {device}")
    return traces[device]


def allocator_actions(snapshot: dict[str, Any], device: int = 0) -> Counter[str]:
    """The caching allocator's recorded actions on ``device``, counted (chapter 05).

    ``"segment_alloc"``/``"segment_free"`` are ``cudaMalloc``/``cudaFree`` calls (memory taken
    from or returned to the driver); ``"alloc"``/``"free_completed"`` are tensors' blocks.

    Raises:
        TypeError: on a snapshot that is not a dict.
        ValueError: when it has no trace for ``device``.
    """
    return Counter(e["action"] for e in _device_trace("allocator_actions", snapshot, device))


def allocated_timeline(snapshot: dict[str, Any], device: int = 0) -> list[int]:
    """Bytes allocated to tensors after each recorded action, from the first one (chapter 05).

    ``alloc`` adds its size, ``free_completed`` subtracts it; the other actions leave it as
    it is (they change what is *reserved*, not what is allocated). The values are relative to
    what was allocated when recording started.

    Raises:
        TypeError: on a snapshot that is not a dict.
        ValueError: when it has no trace for ``device``.
    """
    total, out = 0, []
    for e in _device_trace("allocated_timeline", snapshot, device):
        if e["action"] == "alloc":
            total += e["size"]
        elif e["action"] == "free_completed":
            total -= e["size"]
        out.append(total)
    return out


_PROBE = """
import torch
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
a = torch.randn({size}, {size}, device={device!r})
try:
    first, second = a @ a, a @ a
except RuntimeError as err:
    print("raises" if "CUBLAS_WORKSPACE_CONFIG" in str(err) else "other error")
else:
    print("bitwise equal twice" if torch.equal(first, second) else "differs")
"""


def cublas_product_without_workspace_config(
    device: str = "cuda", size: int = 256, timeout_s: int = 120
) -> str:
    """Run ``a @ a`` twice under deterministic mode in a fresh process without the variable.

    The process starts with ``CUBLAS_WORKSPACE_CONFIG`` removed from its environment, so
    neither cuBLAS nor PyTorch has seen it (chapter 02).

    Args:
        device: ``"cuda"`` (the claim) or ``"cpu"`` (the same code, no cuBLAS: for tests).
        size: the square matrix size.
        timeout_s: seconds the process may take.

    Returns:
        ``"raises"`` (PyTorch refused: torch before 2.10), ``"bitwise equal twice"``,
        ``"differs"`` or ``"other error"``.

    Raises:
        ValueError: on another device or sizes out of range.
        RuntimeError: when the process fails (its last stderr line is quoted).
    """
    check_choice("cublas_product_without_workspace_config", "device", device, ("cuda", "cpu"))
    check_int("cublas_product_without_workspace_config", "size", size, minimum=1)
    check_int("cublas_product_without_workspace_config", "timeout_s", timeout_s, minimum=1)
    env = {k: v for k, v in os.environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(size=size, device=device)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"cublas_product_without_workspace_config: the process failed: {said}")
    return lines[-1]
