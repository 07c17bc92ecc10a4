"""Counting the memory a forward pass keeps for backward (introduced in chapter 05).

Guarantees:

- :func:`saved_activation_bytes` counts, exactly and on any device, the bytes of the tensors
  autograd saves for the backward pass while ``fn`` runs, by observing every saved tensor
  through :func:`torch.autograd.graph.saved_tensors_hooks`. Tensors that share storage
  (views of one tensor, a tensor saved by two ops, an in-place result) are counted once;
  what is counted is the size of the underlying storage, because that is what stays alive.
  The number depends only on shapes, dtypes and the graph, not on timing or the device, so a
  notebook can print it exactly and nbval compares it.
- :func:`peak_cuda_bytes` reports the CUDA caching allocator's peak while ``fn`` runs, above
  what was allocated before; it returns ``None`` where CUDA is unavailable (the CPU allocator
  keeps no such statistics), so a chapter can branch on it.
- :func:`grad_bytes` and :func:`tensor_bytes` add up bytes of tensors you already hold;
- :func:`state_dict_bytes` measures the size a model takes on disk by serialising its
  ``state_dict`` with ``torch.save`` into memory, so quantized tensors, packed parameters and
  tensor subclasses count as they would in a checkpoint file (chapters 05, 07).

Importing this module changes no global state: the hooks are installed only inside the call
and removed on exit, even when ``fn`` raises.
"""

from __future__ import annotations

import io
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import nn

__all__ = ["saved_activation_bytes", "SavedTensorsReport", "saved_tensors_report",
           "peak_cuda_bytes", "grad_bytes", "tensor_bytes", "fmt_bytes", "state_dict_bytes"]


def _storage_key_and_size(t: torch.Tensor) -> tuple[tuple[Any, ...], int]:
    """A key identifying ``t``'s storage and the bytes of that storage."""
    try:
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        nbytes = storage.nbytes()
    except (RuntimeError, NotImplementedError):  # tensors without storage (e.g. some subclasses)
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
    if not callable(fn):
        raise TypeError(f"saved_activation_bytes: fn must be callable, got {type(fn).__name__}")
    ignored_keys = set()
    for t in ignore:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"saved_activation_bytes: ignore must hold tensors, got {type(t).__name__}")
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
    return SavedTensorsReport(sum(seen.values()), count, len(seen), sum(ignored.values()), result)


def saved_activation_bytes(fn: Callable[..., Any], *args: Any, ignore: Iterable[torch.Tensor] = (),
                           **kwargs: Any) -> int:
    """Bytes of the tensors autograd saves for backward while ``fn(*args, **kwargs)`` runs.

    Counted exactly with :func:`torch.autograd.graph.saved_tensors_hooks`: every tensor an op
    saves passes through the hook. Tensors sharing a storage are counted once, at the size of
    the whole storage (a saved view keeps its whole base alive). Parameters saved by an op
    (e.g. a Linear's weight) are counted unless passed in ``ignore``.

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


def peak_cuda_bytes(fn: Callable[..., Any], *args: Any, device: int | str | torch.device | None = None,
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
    if not callable(fn):
        raise TypeError(f"peak_cuda_bytes: fn must be callable, got {type(fn).__name__}")
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


def tensor_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes of the given tensors' storages, each storage once; ``None`` entries count 0.

    Raises:
        TypeError: on an entry that is neither a tensor nor ``None``.
    """
    seen: dict[tuple[Any, ...], int] = {}
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"tensor_bytes: expected tensors or None, got {type(t).__name__}")
        key, nbytes = _storage_key_and_size(t)
        seen[key] = nbytes
    return sum(seen.values())


def grad_bytes(model: torch.nn.Module) -> int:
    """Bytes held by the ``.grad`` tensors of ``model``'s parameters (``None`` grads count 0).

    Raises:
        TypeError: if ``model`` is not an ``nn.Module``.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"grad_bytes: expected an nn.Module, got {type(model).__name__}")
    return tensor_bytes(p.grad for p in model.parameters())


def fmt_bytes(n: int) -> str:
    """Exact, readable byte count: ``"1,048,576 B (1.00 MiB)"``. For device-independent sizes.

    Raises:
        ValueError: on a negative or non-integer count.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"fmt_bytes: expected a non-negative int, got {n!r}")
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
