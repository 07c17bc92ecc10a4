"""Byte counts: saved activations, tensors, gradients, optimizer state, checkpoints (chapter 05).

Exact counts, identical on every device for the same shapes, dtypes and graph; the guarantees are
listed in :mod:`tricks_helpers.memory`, whose face hands these names on.

Importing this module changes no global state: hooks are active only inside the call.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tricks_helpers._checks import check_callable, check_int, check_type

__all__ = [
    "saved_activation_bytes",
    "SavedTensorsReport",
    "saved_tensors_report",
    "grad_bytes",
    "tensor_bytes",
    "optimizer_state_bytes",
    "TrainingStateBytes",
    "training_state_bytes",
    "fmt_bytes",
    "state_dict_bytes",
]


def _is_fake(t: torch.Tensor) -> bool:
    """A FakeTensor (torch.compile's shape-only tensors) has no memory either."""
    fake = getattr(getattr(torch, "_subclasses", None), "fake_tensor", None)
    return fake is not None and isinstance(t, fake.FakeTensor)


_SPARSE_PARTS = {
    torch.sparse_coo: ("_indices", "_values"),
    torch.sparse_csr: ("crow_indices", "col_indices", "values"),
    torch.sparse_bsr: ("crow_indices", "col_indices", "values"),
    torch.sparse_csc: ("ccol_indices", "row_indices", "values"),
    torch.sparse_bsc: ("ccol_indices", "row_indices", "values"),
}


def _pieces(t: torch.Tensor) -> list[torch.Tensor]:
    """The dense tensors that hold ``t``'s data.

    A sparse tensor holds its indices and values (a sparse gradient of an ``nn.Embedding``
    over 3 rows holds 3 rows, not the whole table); a tensor subclass that flattens itself
    (``__tensor_flatten__``: torchao's int8 / int4 weights) holds its inner tensors (the int8
    payload, scales, zero points), not a tensor of its outer dtype; any other tensor is itself.
    """
    parts = _SPARSE_PARTS.get(t.layout)
    if parts is not None:
        return [piece for name in parts for piece in _pieces(getattr(t, name)())]
    if (
        type(t) not in (torch.Tensor, nn.Parameter)
        and hasattr(t, "__tensor_flatten__")
        and not _is_fake(t)
    ):
        names, _ = t.__tensor_flatten__()
        return [piece for name in names for piece in _pieces(getattr(t, name))]
    return [t]


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
        return (
            f"SavedTensorsReport(bytes={self.bytes}, tensors={self.tensors}, "
            f"storages={self.storages}, ignored_bytes={self.ignored_bytes})"
        )


def saved_tensors_report(
    fn: Callable[..., Any], *args: Any, ignore: Iterable[torch.Tensor] = (), **kwargs: Any
) -> SavedTensorsReport:
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
        for piece in _pieces(t):
            ignored_alive.append(piece)
            ignored_keys.add(_storage_key_and_size(piece)[0])
    seen: dict[tuple[Any, ...], int] = {}
    ignored: dict[tuple[Any, ...], int] = {}
    keep_alive: list[torch.Tensor] = []  # a freed storage's address could be reused mid-call
    count = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal count
        count += 1
        for piece in _pieces(t):
            key, nbytes = _storage_key_and_size(piece)
            (ignored if key in ignored_keys else seen)[key] = nbytes
            keep_alive.append(piece)
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


def saved_activation_bytes(
    fn: Callable[..., Any], *args: Any, ignore: Iterable[torch.Tensor] = (), **kwargs: Any
) -> int:
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


def tensor_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes of the given tensors' storages, each storage once; ``None`` entries count 0.

    Views and tensors sharing memory count once, at the size of the whole storage; meta
    tensors count the bytes their storage would take. A sparse tensor counts its indices and
    values (what it holds), not its dense size; a tensor subclass that flattens itself
    (torchao's quantized weights) counts its inner tensors at their own dtypes.

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
        for piece in _pieces(t):
            alive.append(piece)
            key, nbytes = _storage_key_and_size(piece)
            seen[key] = nbytes
    return sum(seen.values())


def grad_bytes(model: torch.nn.Module) -> int:
    """Bytes held by the ``.grad`` tensors of ``model``'s parameters (``None`` grads count 0).

    A sparse gradient (``nn.Embedding(..., sparse=True)``) counts its indices and values.

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


def training_state_bytes(
    model: nn.Module, optimizer: torch.optim.Optimizer | None = None
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
        params=tensor_bytes(params),
        grads=grad_bytes(model),
        optimizer=optimizer_state_bytes(optimizer) if optimizer is not None else 0,
        numel=sum(p.numel() for p in params),
    )


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
        raise TypeError(
            f"state_dict_bytes: expected an nn.Module or a state_dict mapping, "
            f"got {type(obj).__name__}"
        )
    buf = io.BytesIO()
    torch.save(state, buf)
    return buf.tell()
