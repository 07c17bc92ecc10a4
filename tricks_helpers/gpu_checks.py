"""Invariants that decide GPU-only claims: copies overlapped, kernels chosen, cuBLAS checks.

A speed claim that only a GPU can show (pinned memory with ``non_blocking`` copies, a CUDA-stream
prefetcher, tensor cores for multiples of 8, ``CUBLAS_WORKSPACE_CONFIG``) is decided on the GPU
branch of a chapter by a fact of the run, beside a loose speed bound:

- :func:`overlapped_copies` counts host-to-device copies that ran while a kernel ran on another
  stream, from the spans of a profiler trace (:func:`tricks_helpers.traces.trace_spans` with
  ``category=None``): overlap is what ``pin_memory=True`` + ``non_blocking=True`` and a prefetcher
  buy (chapter 03);
- :func:`tensor_core_kernels` picks the kernels whose names say they use tensor cores (04);
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
    "copy_kinds",
    "profile_spans",
    "tensor_core_kernels",
    "allocator_actions",
    "allocated_timeline",
    "cublas_product_without_workspace_config",
]

#: The trace category of CUDA memory copies and of CUDA kernels (Kineto's names).
COPY_CATEGORY = "gpu_memcpy"
KERNEL_CATEGORY = "kernel"

#: Substrings of cuBLAS/CUTLASS kernel names that mean tensor-core (MMA) instructions:
#: ``s884`` (Volta), ``s1688`` (Turing), ``s16816`` (Ampere) MMA shapes; ``hmma``/``xmma``/
#: ``tensorop`` (generic names); ``gmma``/``wgmma`` (Hopper); ``nvjet`` (cuBLAS's generated
#: GEMMs on Hopper and later). A name heuristic: the cell prints the names it matched.
TENSOR_CORE_MARKERS = ("884", "1688", "16816", "hmma", "xmma", "tensorop", "gmma", "nvjet", "_tc_")


def _check_spans(where: str, spans: object) -> Sequence[TraceSpan]:
    check_type(where, "spans", spans, (list, tuple))
    for span in spans:  # type: ignore[union-attr]
        check_type(where, "spans[...]", span, TraceSpan)
    return spans  # type: ignore[return-value]


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
    _check_spans("overlapped_copies", spans)
    check_choice("overlapped_copies", "direction", direction, ("HtoD", "DtoH", "DtoD"))
    copies = [s for s in spans if s.category == COPY_CATEGORY and direction in s.name]
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


def tensor_core_kernels(spans: Sequence[TraceSpan]) -> list[str]:
    """The distinct kernel names of ``spans`` that hold a :data:`TENSOR_CORE_MARKERS` marker.

    Raises:
        TypeError: on spans that are not :class:`~tricks_helpers.traces.TraceSpan` rows.
    """
    _check_spans("tensor_core_kernels", spans)
    names = {s.name for s in spans if s.category == KERNEL_CATEGORY}
    return sorted(n for n in names if any(m in n.lower() for m in TENSOR_CORE_MARKERS))


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
