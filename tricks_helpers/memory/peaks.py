"""Peak memory while a call runs, on CUDA and on the CPU (introduced in chapter 05).

- :func:`peak_cuda_bytes` reports the CUDA caching allocator's peak while ``fn`` runs, above
  what was allocated before; it returns ``None`` where CUDA is unavailable, so a chapter can
  branch on it.
- :func:`cpu_memory_report` / :func:`peak_cpu_bytes` measure what PyTorch's CPU allocator
  hands out while ``fn`` runs (the peak of the call's own allocations, and what of them is
  still allocated at exit), from the allocation events ``torch.profiler`` records with
  ``profile_memory=True``.
  The CPU allocator keeps no peak statistic of its own; the profiler sees every allocation
  and free it makes, so the numbers are exact for a given sequence of operators.

Importing this module changes no global state: the profiler is active only inside the call
and stopped on exit, even when ``fn`` raises. :mod:`tricks_helpers.memory` hands these names
on.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from tricks_helpers._checks import check_callable

__all__ = ["peak_cuda_bytes", "CpuMemoryReport", "cpu_memory_report", "peak_cpu_bytes"]


def peak_cuda_bytes(
    fn: Callable[..., Any],
    *args: Any,
    device: int | str | torch.device | None = None,
    **kwargs: Any,
) -> int | None:
    """Peak CUDA memory allocated while ``fn(*args, **kwargs)`` runs, above the level before it.

    Resets the allocator's peak statistic (``torch.cuda.reset_peak_memory_stats``), runs
    ``fn``, synchronizes, and returns ``max_memory_allocated() - memory_allocated_before``.
    The caching allocator's *reserved* memory (what ``nvidia-smi`` shows) is larger; see
    chapter 05 on ``empty_cache``.

    Args:
        fn: the computation to measure.
        *args, **kwargs: passed to ``fn``.
        device: the CUDA device (default: the current one).

    Returns:
        Bytes, or ``None`` when CUDA is not available: the CPU allocator keeps no peak
        statistic, so there is nothing exact to report (use :func:`saved_activation_bytes`).

    Raises:
        TypeError: if ``fn`` is not callable.
        ValueError: if ``device`` is not a CUDA device.
    """
    check_callable("peak_cuda_bytes", "fn", fn)
    if device is not None:
        dev = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
        if dev.type != "cuda":
            raise ValueError(f"peak_cuda_bytes: device must be a CUDA device, got {dev.type!r}")
    if not torch.cuda.is_available():
        return None
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn(*args, **kwargs)
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


@dataclass(frozen=True)
class CpuMemoryReport:
    """What PyTorch's CPU allocator handed out during one call (see :func:`cpu_memory_report`).

    Attributes:
        peak: the highest number of bytes the call's own allocations held at any moment (0 when
            nothing was allocated).
        retained: bytes the call allocated that are still allocated at exit (never negative:
            frees of tensors allocated before the call are not counted).
        allocations: how many allocations the call made.
        result: what ``fn`` returned (it may hold some of the ``retained`` bytes).
    """

    peak: int
    retained: int
    allocations: int
    result: Any = field(default=None, repr=False, compare=False)


# Lines the profiler's C++ backend writes straight to file descriptor 2: Kineto's timestamped
# start/stop lines (every profile prints them, with or without memory), and c10's one-time
# warning that a block allocated before profiling started was freed (size never recorded).
_BACKEND_LINES = re.compile(
    r"^(?:USDT|STAGE):\S* .*\.cpp:\d+\]|"
    r"Memory block of unknown size was allocated before the profiling started|"
    r"gpuGetDeviceCount failed with code"  # a CUDA build of torch on a machine with no GPU
)


@contextlib.contextmanager
def without_profiler_backend_lines() -> Iterator[None]:
    """Send fd 2 to a temporary file inside the block; re-emit every line but the backend's.

    Those lines carry timestamps and process ids, so a notebook that prints them differs on
    every run. Anything else written to fd 2 (C++ warnings, Python's stderr outside Jupyter)
    is written back, in order, when the block ends.
    """
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (embedded interpreters): nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            lines = tmp.read().decode("utf-8", errors="replace").splitlines(keepends=True)
            kept = "".join(line for line in lines if not _BACKEND_LINES.search(line))
            if kept:
                os.write(2, kept.encode("utf-8"))


def _profiler_running() -> bool:
    """Whether a torch profiler is active in this process (Kineto or the legacy one)."""
    enabled = getattr(torch._C._autograd, "_profiler_enabled", None)
    if enabled is not None:
        return bool(enabled())
    return bool(getattr(torch.autograd.profiler, "_is_profiler_enabled", False))


def cpu_memory_report(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> CpuMemoryReport:
    """Run ``fn(*args, **kwargs)`` and measure what PyTorch's CPU allocator hands out meanwhile.

    The call runs under ``torch.profiler.profile(activities=[CPU], profile_memory=True)``,
    which records every allocation and free of PyTorch's CPU allocator with its address and
    size. The events are replayed in time order: the peak is the most the call's own
    allocations held at once, so it counts tensors, temporaries inside operators, gradients
    and optimizer state created by the call, and is exact for a given sequence of operators
    (it does not depend on timing or on what earlier profiles recorded). Chapter 05 uses it
    for the CPU peak-memory claims (checkpointing, in-place ReLU, holding a loss), which on
    CUDA ``torch.cuda.max_memory_allocated`` answers.

    What it does not see: memory not allocated through PyTorch's CPU allocator (NumPy
    arrays, Python objects, buffers BLAS libraries allocate for themselves), CUDA memory, and
    frees of tensors allocated *before* the call: they are never counted (the allocator's
    running total counts some of them, those whose size an earlier profile recorded, so it is
    not used), and a call that frees older tensors reports the peak and ``retained`` of its
    own allocations only. Allocations made by other threads meanwhile are counted.

    To keep the numbers repeatable, pending garbage is collected first (``gc.collect()``)
    and the cyclic garbage collector is paused during the call (and restored after), so it
    cannot free older tensors in the middle of a measurement.

    The profiler's C++ backend prints timestamped lines to file descriptor 2 while it runs;
    they are filtered out (anything else written to fd 2 is passed through), so notebook
    outputs stay stable. A profiler already running in this thread cannot be nested with it.

    Args:
        fn: the computation, e.g. a forward pass or a whole training step.
        *args, **kwargs: passed to ``fn``.

    Returns:
        A :class:`CpuMemoryReport`.

    Raises:
        TypeError: if ``fn`` is not callable.
        RuntimeError: if this torch's profiler does not expose allocation events, or a
            profiler is already running (``torch.profiler.profile()`` around the call): the
            two cannot be nested, and starting this one would empty the outer one's results.
    """
    check_callable("cpu_memory_report", "fn", fn)
    if _profiler_running():
        raise RuntimeError(
            "cpu_memory_report: a profiler is already running (torch.profiler.profile or "
            "torch.autograd.profiler.profile around this call); the two cannot be nested, and "
            "starting this one would leave the outer profile empty. Call it outside the profile."
        )
    from torch.profiler import ProfilerActivity, profile

    try:
        from torch._C._profiler import _EventType
    except ImportError as err:  # pragma: no cover - depends on the torch version
        raise RuntimeError(
            "cpu_memory_report: this torch's profiler exposes no allocation events"
        ) from err
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with without_profiler_backend_lines(), warnings.catch_warnings():
            # torch 2.10 warns at every first profile that events are cleared between cycles
            warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                result = fn(*args, **kwargs)
    finally:
        if gc_was_enabled:
            gc.enable()
    try:
        roots = list(prof.profiler.kineto_results.experimental_event_tree())
    except AttributeError as err:  # pragma: no cover - depends on the torch version
        raise RuntimeError(
            "cpu_memory_report: this torch's profiler exposes no event tree"
        ) from err
    events = []
    while roots:
        node = roots.pop()
        roots.extend(node.children)
        if node.tag != _EventType.Allocation or node.extra_fields.device.type != "cpu":
            continue
        ev = node.extra_fields
        events.append((node.start_time_ns, ev.ptr, ev.alloc_size))
    # Replay the call's own allocations in time order. A free is counted only when the block
    # was allocated during the call: the allocator's running total would also count frees of
    # some older blocks (those whose size it recorded in an earlier profile, even when the
    # address has since been reused), so it is not used.
    events.sort(key=lambda e: e[0])
    live: dict[int, int] = {}
    level = peak = allocations = 0
    for _, ptr, size in events:
        if size > 0:
            live[ptr] = size
            level += size
            allocations += 1
            peak = max(peak, level)
        elif ptr in live:
            level -= live.pop(ptr)
    return CpuMemoryReport(peak=peak, retained=level, allocations=allocations, result=result)


def peak_cpu_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Peak bytes PyTorch's CPU allocator handed out during ``fn(*args, **kwargs)``.

    The ``peak`` of :func:`cpu_memory_report` (see there for what is and is not seen).

    Raises:
        TypeError: if ``fn`` is not callable.
        RuntimeError: as :func:`cpu_memory_report` (a profiler already running).
    """
    return cpu_memory_report(fn, *args, **kwargs).peak
