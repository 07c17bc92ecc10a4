"""Counting the operations that force a host read: the syncs of a training loop (chapter 10).

On a GPU the host queues kernels and runs ahead; an operation whose *result must be on the
host* (a Python number, a ``bool`` for an ``if``, a copy to CPU memory) makes it wait until
the queue has drained: a host-device synchronization. Which Python idioms do that is a fact of
the dispatcher, the same on a CPU: :class:`HostReadCounter` counts, with a
``TorchDispatchMode``, the ATen operators that produce host values
(:data:`HOST_READ_OPS`: ``aten._local_scalar_dense``, behind ``.item()``, ``float()``,
``bool()`` and printing) and the copies from a non-CPU device to the CPU (``.cpu()``,
``.to("cpu")``, ``.numpy()`` after them). On a CPU tensor ``.cpu()`` returns the tensor
itself: nothing is dispatched and there is nothing to wait for.

Operators whose output *size* depends on the data (:data:`DATA_DEPENDENT_OPS`: ``nonzero``,
``unique``, ``masked_select``, ``bincount``, ``repeat_interleave`` without ``output_size``, and
indexing with or assigning through a boolean mask, ``x[mask]``, ``x[mask] = v``) are counted as
host reads too: on a GPU the host must learn how many elements the result has before it can
allocate it, so each one waits like ``.item()`` does (their names in :attr:`HostReadCounter.reads`
end in ``(data-dependent shape)``). A library function that makes such a read inside C++ (below
the dispatcher) is not seen; :func:`profiled_host_reads` sees what reaches
``aten::_local_scalar_dense``.

Guarantees: counting changes no result (every operator runs as it would); the counts are
exact for the code run inside the mode; nothing global is changed outside the ``with`` block.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tricks_helpers._checks import check_callable
from tricks_helpers.memory.peaks import without_profiler_backend_lines

__all__ = [
    "HOST_READ_OPS",
    "DATA_DEPENDENT_OPS",
    "HostReadCounter",
    "host_reads",
    "dispatched_ops",
    "profiled_host_reads",
]

#: ATen operators whose output is a host value (a Python scalar): each one is a sync on a GPU.
HOST_READ_OPS = frozenset({"aten._local_scalar_dense.default", "aten.item.default"})

#: ATen operators whose output size depends on the values of an input: the host reads that
#: size (a sync on a GPU). ``aten.index.Tensor`` and ``aten.index_put_``/``index_put`` count
#: only with a boolean (or uint8) mask among their indices.
DATA_DEPENDENT_OPS = frozenset(
    {
        "aten.nonzero.default",
        "aten.argwhere.default",
        "aten._unique.default",
        "aten._unique2.default",
        "aten.unique_dim.default",
        "aten.unique_consecutive.default",
        "aten.unique_dim_consecutive.default",
        "aten.masked_select.default",
        "aten.bincount.default",
        "aten.repeat_interleave.Tensor",
        "aten.repeat_interleave.self_Tensor",
    }
)
_MASK_INDEXING = ("aten.index.Tensor", "aten.index_put_.default", "aten.index_put.default")

_COPIES = ("aten._to_copy.default", "aten.copy_.default")


def _device_of(value: Any) -> torch.device | None:
    return value.device if isinstance(value, torch.Tensor) else None


def _is_device_to_host(name: str, args: tuple, kwargs: dict, out: Any) -> bool:
    if name not in _COPIES:
        return False
    if name == "aten.copy_.default":  # copy_(dst, src)
        dst, src = _device_of(args[0]), _device_of(args[1])
    else:
        src, dst = _device_of(args[0]), _device_of(out)
    return src is not None and dst is not None and src.type != "cpu" and dst.type == "cpu"


def _is_data_dependent(name: str, args: tuple, kwargs: dict) -> bool:
    if name in DATA_DEPENDENT_OPS:
        return not (name.startswith("aten.repeat_interleave") and kwargs.get("output_size"))
    if name in _MASK_INDEXING and len(args) > 1:
        return any(
            isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)
            for i in args[1]
            if i is not None
        )
    return False


class HostReadCounter(TorchDispatchMode):
    """A dispatch mode that records every ATen operator, and which of them read to the host.

    Attributes:
        ops: ``Counter`` of every operator dispatched, by name (``"aten.mm.default"``).
        reads: ``Counter`` of the host reads among them: :data:`HOST_READ_OPS`, copies
            from a non-CPU device to the CPU (named ``"<op> (device to host)"``) and operators
            with a data-dependent output size (named ``"<op> (data-dependent shape)"``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = str(func)
        self.ops[name] += 1
        if name in HOST_READ_OPS:
            self.reads[name] += 1
        elif _is_device_to_host(name, args, kwargs, out):
            self.reads[f"{name} (device to host)"] += 1
        elif _is_data_dependent(name, args, kwargs):
            self.reads[f"{name} (data-dependent shape)"] += 1
        return out

    @property
    def total(self) -> int:
        """The number of host reads counted."""
        return sum(self.reads.values())


def host_reads(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """The number of host reads ``fn(*args, **kwargs)`` dispatches (see
    :class:`HostReadCounter`: scalar reads, device-to-host copies and operators with a
    data-dependent output size such as ``x[mask]``, ``nonzero``, ``unique``).

    Raises:
        TypeError: when ``fn`` is not callable.
    """
    check_callable("host_reads", "fn", fn)
    with HostReadCounter() as counter:
        fn(*args, **kwargs)
    return counter.total


def dispatched_ops(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Counter[str]:
    """Every ATen operator ``fn(*args, **kwargs)`` dispatches, counted by name.

    Raises:
        TypeError: when ``fn`` is not callable.
    """
    check_callable("dispatched_ops", "fn", fn)
    with HostReadCounter() as counter:
        fn(*args, **kwargs)
    return counter.ops


def profiled_host_reads(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """The number of ``aten::_local_scalar_dense`` calls the profiler records for ``fn``.

    The profiler sees below Python: tensor printing (which turns dispatch modes off while it
    formats) and ``Tensor.__bool__`` are counted here, where :func:`host_reads` sees only what
    reaches the Python dispatch mode. Operators with a data-dependent output size are not
    counted here: on a CPU they make no ``_local_scalar_dense`` call (use :func:`host_reads`).

    It starts a profiler of its own, and refuses to run inside one: a nested profiler would
    end the outer profile's session, whose events would then be lost.

    Raises:
        TypeError: when ``fn`` is not callable.
        RuntimeError: when a profiler is already running.
    """
    from torch.profiler import ProfilerActivity, profile

    check_callable("profiled_host_reads", "fn", fn)
    if torch.autograd.profiler._is_profiler_enabled:
        raise RuntimeError(
            "profiled_host_reads: a profiler is already running; call it outside the "
            "other profiler (a nested one would end the outer session and lose its events)"
        )
    # Kineto writes timestamped start/stop lines to fd 2, which a notebook shows at random
    # (ipykernel forwards fd 2 asynchronously): filtered, as memory's CPU reports do. torch
    # 2.10 warns at a process's first profiler that each cycle's events are cleared (later
    # releases only from a second cycle on): this profile has one cycle, so nothing is lost.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Warning: Profiler clears events", UserWarning)
        with without_profiler_backend_lines(), profile(activities=[ProfilerActivity.CPU]) as prof:
            fn(*args, **kwargs)
    return sum(1 for event in prof.events() if event.name == "aten::_local_scalar_dense")
