"""Prefetch the next batch to the GPU on a side CUDA stream while this one is used (chapter 03).

The seed's ``DataPrefetcher`` trick: with ``pin_memory=True`` batches and ``non_blocking=True``
copies issued on a second CUDA stream, the host-to-device copy of batch ``k + 1`` runs while
the GPU computes on batch ``k``. :class:`CUDAPrefetcher` does that for any iterable of batches
(tensors, or tuples, lists and dicts of them):

- on ``"cuda"`` it copies one batch ahead on its own stream; before a batch is handed out the
  current stream waits for that batch's copy (an event recorded after it, so the copy of the
  next batch, issued already, still overlaps this batch's compute), and every tensor is marked
  as used by the current stream (``Tensor.record_stream``) so the caching allocator does not
  reuse its memory too early;
- on ``"cpu"`` there is no copy to overlap: batches pass through unchanged, and
  :attr:`CUDAPrefetcher.note` says so in one line.

:func:`lookahead` is the ordering logic alone (load item ``k + 1`` before yielding item ``k``),
tested on the CPU. Importing this module changes no global state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import torch

from tricks_helpers._checks import check_callable, check_type

__all__ = ["CUDAPrefetcher", "lookahead", "batch_to"]

T = TypeVar("T")
U = TypeVar("U")


def batch_to(batch: Any, device: torch.device, *, non_blocking: bool = False) -> Any:
    """``batch`` with every tensor moved to ``device`` (tuples, lists and dicts walked).

    Other values (labels as ints, file names) are returned as they are.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=non_blocking)
    if isinstance(batch, tuple):
        return tuple(batch_to(b, device, non_blocking=non_blocking) for b in batch)
    if isinstance(batch, list):
        return [batch_to(b, device, non_blocking=non_blocking) for b in batch]
    if isinstance(batch, dict):
        return {k: batch_to(v, device, non_blocking=non_blocking) for k, v in batch.items()}
    return batch


def _tensors(batch: Any) -> Iterator[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        yield batch
    elif isinstance(batch, (tuple, list)):
        for b in batch:
            yield from _tensors(b)
    elif isinstance(batch, dict):
        for v in batch.values():
            yield from _tensors(v)


def lookahead(items: Iterable[T], load: Callable[[T], U]) -> Iterator[U]:
    """Yield ``load(item)`` for each item, calling ``load`` on the next item *before* yielding.

    So while the caller works on item ``k``, ``load`` has already been issued for ``k + 1``
    (on a GPU: an asynchronous copy). At most one loaded item is held ahead.

    Raises:
        TypeError: when ``load`` is not callable.
    """
    check_callable("lookahead", "load", load)
    it = iter(items)
    try:
        ahead = load(next(it))
    except StopIteration:
        return
    for item in it:
        current, ahead = ahead, load(item)
        yield current
    yield ahead


class CUDAPrefetcher:
    """Iterate ``loader``, copying one batch ahead to ``device`` on a side CUDA stream.

    Args:
        loader: any iterable of batches (a ``DataLoader``; use ``pin_memory=True`` so the copies
            can be asynchronous).
        device: ``"cuda"`` (or ``"cuda:N"``) to prefetch; ``"cpu"`` to pass batches through.

    Attributes:
        device: the :class:`torch.device`.
        note: one line saying what the prefetcher does on this device.

    Raises:
        TypeError: when ``loader`` is not iterable or ``device`` not a device.
        ValueError: for a device type other than ``cpu`` or ``cuda``, or ``cuda`` without CUDA.
    """

    def __init__(self, loader: Iterable[Any], device: str | torch.device) -> None:
        check_type("CUDAPrefetcher", "loader", loader, Iterable)
        check_type("CUDAPrefetcher", "device", device, (str, torch.device))
        self.loader = loader
        self.device = torch.device(device)
        if self.device.type not in ("cpu", "cuda"):
            raise ValueError(
                f"CUDAPrefetcher: expected a 'cpu' or 'cuda' device, got {self.device.type!r}"
            )
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(
                "CUDAPrefetcher: CUDA requested but torch.cuda.is_available() is False"
            )
        if self.device.type == "cuda":
            self.note = "cuda: next batch copied on a side stream while this one is used"
        else:
            self.note = "cpu: batches pass through unchanged (no host-to-device copy to overlap)"

    def __iter__(self) -> Iterator[Any]:
        if self.device.type == "cpu":
            yield from self.loader
            return
        side = torch.cuda.Stream(self.device)

        def load(batch: Any) -> tuple[Any, torch.cuda.Event]:
            with torch.cuda.stream(side):
                moved = batch_to(batch, self.device, non_blocking=True)
                copied = torch.cuda.Event()
                copied.record(side)  # this batch's copy only, not the ones issued after it
            return moved, copied

        for batch, copied in lookahead(self.loader, load):
            current = torch.cuda.current_stream(self.device)
            current.wait_event(copied)  # the copy of this batch is finished before it is used
            for t in _tensors(batch):
                t.record_stream(current)  # its memory is not reused while current may read it
            yield batch
