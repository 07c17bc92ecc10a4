"""Counting memory: saved activations, peaks, training state (introduced in chapter 05).

Guarantees:

- :func:`saved_activation_bytes` counts, exactly and on any device, the bytes of the tensors
  autograd saves for the backward pass while ``fn`` runs, by observing every saved tensor
  through :func:`torch.autograd.graph.saved_tensors_hooks`. Tensors that share storage
  (views of one tensor, a tensor saved by two ops, an in-place result) are counted once;
  what is counted is the size of the underlying storage, because that is what stays alive.
  The number depends only on shapes, dtypes and the graph, not on timing or the device, so a
  notebook can print it exactly and nbval compares it.
  Meta tensors (no memory, only shapes) are counted at the size their storage would have, so
  a model built on ``device="meta"`` can be sized without allocating it.
- :func:`peak_cuda_bytes` reports the CUDA caching allocator's peak while ``fn`` runs, above
  what was allocated before; it returns ``None`` where CUDA is unavailable, so a chapter can
  branch on it.
- :func:`cpu_memory_report` / :func:`peak_cpu_bytes` measure what PyTorch's CPU allocator
  hands out while ``fn`` runs (peak above the level at entry, and what is still allocated at
  exit), from the allocation events ``torch.profiler`` records with ``profile_memory=True``.
  The CPU allocator keeps no peak statistic of its own; the profiler sees every allocation
  and free it makes, so the numbers are exact for a given sequence of operators.
- :func:`grad_bytes`, :func:`tensor_bytes`, :func:`optimizer_state_bytes` and
  :func:`training_state_bytes` add up bytes of tensors you already hold (parameters,
  gradients, optimizer state: the memory budget of chapter 05);
- :func:`state_dict_bytes` measures the size a model takes on disk by serialising its
  ``state_dict`` with ``torch.save`` into memory, so quantized tensors, packed parameters and
  tensor subclasses count as they would in a checkpoint file (chapters 05, 07).

Importing this module changes no global state: hooks and the profiler are active only inside
the call and removed on exit, even when ``fn`` raises.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

import torch
from torch import nn

from tricks_helpers._checks import check_callable, check_int, check_type

__all__ = ["saved_activation_bytes", "SavedTensorsReport", "saved_tensors_report",
           "peak_cuda_bytes", "CpuMemoryReport", "cpu_memory_report", "peak_cpu_bytes",
           "grad_bytes", "tensor_bytes", "optimizer_state_bytes", "TrainingStateBytes",
           "training_state_bytes", "fmt_bytes", "state_dict_bytes"]


def _is_fake(t: torch.Tensor) -> bool:
    """A FakeTensor (torch.compile's shape-only tensors) has no memory either."""
    fake = getattr(getattr(torch, "_subclasses", None), "fake_tensor", None)
    return fake is not None and isinstance(t, fake.FakeTensor)


def _storage_key_and_size(t: torch.Tensor) -> tuple[tuple[Any, ...], int]:
    """A key identifying ``t``'s storage and the bytes of that storage.

    Real storages are identified by device and address (two storage objects over the same
    memory count once). Meta and fake storages have no address (``data_ptr()`` is 0 for all
    of them, which once made them collide): they are identified by the storage object itself
    and sized from their shape and dtype.
    """
    shapeless = t.device.type == "meta" or _is_fake(t)
    try:
        storage = t.untyped_storage()
        nbytes = storage.nbytes()
        if shapeless:
            return ("storage", storage._cdata), nbytes
        ptr = storage.data_ptr()
    except (RuntimeError, NotImplementedError, AttributeError):  # no storage (some subclasses)
        return ("id", id(t)), t.numel() * t.element_size()
    if nbytes == 0:
        return ("empty",), 0
    return (t.device.type, t.device.index, ptr), nbytes


class SavedTensorsReport:
    """What autograd saved for backward during one call (see :func:`saved_tensors_report`).

    Attributes:
        bytes: bytes of distinct storages saved (each storage counted once).
        tensors: how many times a tensor was handed to autograd for saving (with repeats).
        storages: how many distinct storages those tensors live in.
        ignored_bytes: bytes of saved storages that were excluded via ``ignore``.
        result: what ``fn`` returned.
    """

    def __init__(self, nbytes: int, tensors: int, storages: int, ignored_bytes: int, result: Any):
        self.bytes = nbytes
        self.tensors = tensors
        self.storages = storages
        self.ignored_bytes = ignored_bytes
        self.result = result

    def __repr__(self) -> str:
        return (f"SavedTensorsReport(bytes={self.bytes}, tensors={self.tensors}, "
                f"storages={self.storages}, ignored_bytes={self.ignored_bytes})")


def saved_tensors_report(fn: Callable[..., Any], *args: Any, ignore: Iterable[torch.Tensor] = (),
                         **kwargs: Any) -> SavedTensorsReport:
    """Run ``fn(*args, **kwargs)`` and report every tensor autograd saved for backward.

    Args:
        fn: the computation, typically a forward pass (``model``, or a lambda around it).
        *args, **kwargs: passed to ``fn``.
        ignore: tensors whose storages are not counted (e.g. ``model.parameters()``: weights
            are saved by reference and stay alive anyway, so they are not activation memory).

    Returns:
        A :class:`SavedTensorsReport`; its ``result`` is ``fn``'s return value, whose graph
        still holds the saved tensors (call backward on it, or drop it).

    Raises:
        TypeError: if ``fn`` is not callable or ``ignore`` holds something that is not a tensor.
    """
    check_callable("saved_activation_bytes", "fn", fn)
    ignored_keys = set()
    ignored_alive = []  # keep ignored tensors alive so their storage keys stay unique
    for t in ignore:
        check_type("saved_activation_bytes", "ignore entry", t, torch.Tensor)
        ignored_alive.append(t)
        ignored_keys.add(_storage_key_and_size(t)[0])
    seen: dict[tuple[Any, ...], int] = {}
    ignored: dict[tuple[Any, ...], int] = {}
    keep_alive: list[torch.Tensor] = []  # a freed storage's address could be reused mid-call
    count = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal count
        count += 1
        key, nbytes = _storage_key_and_size(t)
        (ignored if key in ignored_keys else seen)[key] = nbytes
        keep_alive.append(t)
        return t

    def unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            result = fn(*args, **kwargs)
    finally:
        keep_alive.clear()
        ignored_alive.clear()
    return SavedTensorsReport(sum(seen.values()), count, len(seen), sum(ignored.values()), result)


def saved_activation_bytes(fn: Callable[..., Any], *args: Any, ignore: Iterable[torch.Tensor] = (),
                           **kwargs: Any) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn(*args, **kwargs)`` runs.

    Counted exactly with :func:`torch.autograd.graph.saved_tensors_hooks`: every tensor an op
    saves passes through the hook. Tensors sharing a storage are counted once, at the size of
    the whole storage (a saved view keeps its whole base alive). Parameters saved by an op
    (e.g. a Linear's weight) are counted unless passed in ``ignore``.

    Meta tensors are counted by shape and dtype (the bytes their storage would take), so the
    activation memory of a model too large to allocate can be counted on ``device="meta"``.

    Returns 0 when nothing is saved, which is correct and often the point: under
    ``torch.no_grad()`` or ``torch.inference_mode()``, or when no input requires grad. It is
    not an error, so a chapter can show it. What is *not* seen: tensors kept alive by other
    means (Python references, a closure such as checkpointing's recompute function holding
    its inputs, an optimizer's state).

    Args:
        fn: the computation, typically a forward pass.
        *args, **kwargs: passed to ``fn``.
        ignore: tensors whose storages are not counted (e.g. ``model.parameters()``).

    Returns:
        The number of bytes (an ``int``, identical on every device for the same graph).

    Raises:
        TypeError: if ``fn`` is not callable or ``ignore`` holds a non-tensor.
    """
    return saved_tensors_report(fn, *args, ignore=ignore, **kwargs).bytes


def peak_cuda_bytes(fn: Callable[..., Any], *args: Any,
                    device: int | str | torch.device | None = None,
                    **kwargs: Any) -> int | None:
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
        peak: the highest number of bytes allocated at any moment of the call, above the level
            at entry (0 when nothing was allocated).
        retained: bytes still allocated at exit, above the level at entry (negative when the
            call freed more than it allocated, e.g. gradients set to ``None``).
        allocations: how many allocations the call made.
        result: what ``fn`` returned (it may hold some of the ``retained`` bytes).
    """

    peak: int
    retained: int
    allocations: int
    result: Any = field(default=None, repr=False, compare=False)


# Lines the profiler's C++ backend writes straight to file descriptor 2 while memory is
# profiled: Kineto's timestamped start/stop lines, and c10's one-time warning that a block
# allocated before profiling started was freed (its size was never recorded).
_BACKEND_LINES = re.compile(
    r"^(?:USDT|STAGE):\S* .*\.cpp:\d+\]|"
    r"Memory block of unknown size was allocated before the profiling started")


@contextlib.contextmanager
def _without_profiler_backend_lines() -> Iterator[None]:
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


def cpu_memory_report(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> CpuMemoryReport:
    """Run ``fn(*args, **kwargs)`` and measure what PyTorch's CPU allocator hands out meanwhile.

    The call runs under ``torch.profiler.profile(activities=[CPU], profile_memory=True)``,
    which records every allocation and free of PyTorch's CPU allocator with the allocator's
    running total. The peak is the highest running total during the call minus the total at
    entry, so it counts tensors, temporaries inside operators, gradients and optimizer state
    created by the call, and is exact for a given sequence of operators (it does not depend
    on timing). Chapter 05 uses it for the CPU peak-memory claims (checkpointing, in-place
    ReLU, holding a loss), which on CUDA ``torch.cuda.max_memory_allocated`` answers.

    What it does not see: memory not allocated through PyTorch's CPU allocator (NumPy
    arrays, Python objects, buffers BLAS libraries allocate for themselves), CUDA memory, and
    frees of tensors allocated *before* the call (the allocator never recorded their size):
    a call that frees older tensors reports a peak that may be too high and a ``retained``
    that is too high. Allocations made by other threads meanwhile are counted.

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
        RuntimeError: if this torch's profiler does not expose allocation events.
    """
    check_callable("cpu_memory_report", "fn", fn)
    from torch.profiler import ProfilerActivity, profile
    try:
        from torch._C._profiler import _EventType
    except ImportError as err:  # pragma: no cover - depends on the torch version
        raise RuntimeError("cpu_memory_report: this torch's profiler exposes no allocation "
                           "events") from err
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with _without_profiler_backend_lines():
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                # Two markers bracket the call, of 1 and 2 bytes so that they are told apart:
                # the allocator's running total at the first is the level at entry, at the
                # second the level at exit (plus its own 2 bytes).
                start = torch.empty(1, dtype=torch.uint8)
                result = fn(*args, **kwargs)
                end = torch.empty(2, dtype=torch.uint8)
            markers = {(start.data_ptr(), 1), (end.data_ptr(), 2)}
            del start, end
    finally:
        if gc_was_enabled:
            gc.enable()
    try:
        roots = list(prof.profiler.kineto_results.experimental_event_tree())
    except AttributeError as err:  # pragma: no cover - depends on the torch version
        raise RuntimeError("cpu_memory_report: this torch's profiler exposes no event "
                           "tree") from err
    entry = exit_plus_marker = None
    totals, allocations = [], 0
    while roots:
        node = roots.pop()
        roots.extend(node.children)
        if node.tag != _EventType.Allocation or node.extra_fields.device.type != "cpu":
            continue
        ev = node.extra_fields
        if ev.alloc_size > 0 and (ev.ptr, ev.alloc_size) in markers:
            if ev.alloc_size == 1:
                entry = ev.total_allocated
            else:
                exit_plus_marker = ev.total_allocated
            continue
        totals.append(ev.total_allocated)
        allocations += ev.alloc_size > 0
    if entry is None or exit_plus_marker is None:  # pragma: no cover - never seen
        raise RuntimeError("cpu_memory_report: the profiler recorded no allocation events")
    # Every other event lies between the markers: the start marker is the first thing
    # allocated under the profiler and the end marker the last.
    peak = max(totals, default=entry) - entry
    return CpuMemoryReport(peak=max(peak, 0), retained=exit_plus_marker - 2 - entry,
                           allocations=allocations, result=result)


def peak_cpu_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Peak bytes PyTorch's CPU allocator handed out during ``fn(*args, **kwargs)``.

    The ``peak`` of :func:`cpu_memory_report` (see there for what is and is not seen).

    Raises:
        TypeError: if ``fn`` is not callable.
    """
    return cpu_memory_report(fn, *args, **kwargs).peak


def tensor_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes of the given tensors' storages, each storage once; ``None`` entries count 0.

    Views and tensors sharing memory count once, at the size of the whole storage; meta
    tensors count the bytes their storage would take.

    Raises:
        TypeError: on an entry that is neither a tensor nor ``None``.
    """
    seen: dict[tuple[Any, ...], int] = {}
    alive = []  # a temporary freed mid-iteration could hand its address to the next one
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"tensor_bytes: expected tensors or None, got {type(t).__name__}")
        alive.append(t)
        key, nbytes = _storage_key_and_size(t)
        seen[key] = nbytes
    return sum(seen.values())


def grad_bytes(model: torch.nn.Module) -> int:
    """Bytes held by the ``.grad`` tensors of ``model``'s parameters (``None`` grads count 0).

    Raises:
        TypeError: if ``model`` is not an ``nn.Module``.
    """
    check_type("grad_bytes", "model", model, nn.Module)
    return tensor_bytes(p.grad for p in model.parameters())


def _state_tensors(obj: Any) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, Mapping):
        for value in obj.values():
            yield from _state_tensors(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            yield from _state_tensors(value)


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of the tensors in ``optimizer.state_dict()["state"]`` (chapter 05).

    That is the optimizer's own memory: momentum buffers (SGD), ``exp_avg`` and
    ``exp_avg_sq`` and the per-parameter ``step`` counters (Adam). It is empty (0 bytes) until
    the first ``step()``: optimizers create their state lazily.

    Raises:
        TypeError: if ``optimizer`` is not a ``torch.optim.Optimizer``.
    """
    check_type("optimizer_state_bytes", "optimizer", optimizer, torch.optim.Optimizer)
    return tensor_bytes(_state_tensors(optimizer.state_dict()["state"]))


@dataclass(frozen=True)
class TrainingStateBytes:
    """The memory a training run holds besides activations (see :func:`training_state_bytes`).

    Attributes:
        params: bytes of the parameters.
        grads: bytes of their ``.grad`` tensors (0 for ``None`` grads).
        optimizer: bytes of the optimizer's state (:func:`optimizer_state_bytes`).
        numel: number of parameter elements.
    """

    params: int
    grads: int
    optimizer: int
    numel: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer

    @property
    def per_parameter(self) -> float:
        """Bytes per parameter element: ``total / numel`` (e.g. 16 for float32 Adam + grads)."""
        return self.total / self.numel if self.numel else 0.0


def training_state_bytes(model: nn.Module, optimizer: torch.optim.Optimizer | None = None
                         ) -> TrainingStateBytes:
    """Parameters + gradients + optimizer state of a model, in bytes (chapter 05).

    Counted from the real tensors (``model.parameters()``, their ``.grad``, and the
    optimizer's ``state_dict()``), so dtypes and lazily created state count as they are: call
    it after a ``backward()`` and a ``step()`` to see the steady state of training.

    Raises:
        TypeError: on a model that is not an ``nn.Module`` or an optimizer that is not one.
    """
    check_type("training_state_bytes", "model", model, nn.Module)
    if optimizer is not None:
        check_type("training_state_bytes", "optimizer", optimizer, torch.optim.Optimizer)
    params = list(model.parameters())
    return TrainingStateBytes(
        params=tensor_bytes(params), grads=grad_bytes(model),
        optimizer=optimizer_state_bytes(optimizer) if optimizer is not None else 0,
        numel=sum(p.numel() for p in params))


def fmt_bytes(n: int) -> str:
    """Exact, readable byte count: ``"1,048,576 B (1.00 MiB)"``. For device-independent sizes.

    Raises:
        TypeError: on a count that is not an integer (``bool`` included).
        ValueError: on a negative count.
    """
    n = check_int("fmt_bytes", "n", n, minimum=0)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n:,} B ({n / scale:.2f} {unit})"
    return f"{n:,} B"


def state_dict_bytes(obj: nn.Module | Mapping[str, object]) -> int:
    """Bytes of ``torch.save(state_dict)`` for a module or a state_dict.

    Args:
        obj: an ``nn.Module`` (its ``state_dict()`` is saved) or a state_dict mapping.

    Returns:
        The number of bytes ``torch.save`` writes (to an in-memory buffer). Deterministic
        for a given state_dict and torch version.

    Raises:
        TypeError: when ``obj`` is neither a module nor a mapping.
    """
    if isinstance(obj, nn.Module):
        state = obj.state_dict()
    elif isinstance(obj, Mapping):
        state = obj
    else:
        raise TypeError(f"state_dict_bytes: expected an nn.Module or a state_dict mapping, "
                        f"got {type(obj).__name__}")
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.tell()
