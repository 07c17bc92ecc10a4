"""The clock: where timed work runs, and one synchronised timing of it (chapter 01).

:func:`device_class` says where the timed work runs (from what is timed, never from what the
machine has); :func:`time_once` times ``number`` calls, waiting for the GPU before the clock
starts and before it stops, and refuses a clock that did not advance. :mod:`.timing` and
:mod:`.pairs` time through it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from tricks_helpers._checks import check_int

__all__ = ["device_class"]

_DEVICE_TYPES = ("cpu", "cuda")


def device_class(device: str | torch.device) -> str:
    """Return ``"cuda"`` or ``"cpu"`` for ``device``: the device the timed work runs on.

    There is no default: a timing's device comes from what is timed, never from what the
    machine has, so CPU-only work timed on a machine with a GPU is still labelled ``"cpu"``
    (and not synchronised with the GPU).

    Raises:
        TypeError: when ``device`` is ``None`` or not a device (pass ``"cpu"``, ``"cuda"`` or
            the ``.device`` of the tensors the timed function works on).
        ValueError: for another device type (``"mps"``, ``"meta"``...).
    """
    if device is None:
        raise TypeError(
            "device_class: device is required: pass where the timed work runs ('cpu', "
            "'cuda', or a tensor's .device), not what the machine has"
        )
    if not isinstance(device, (str, torch.device)):
        raise TypeError(
            f"device_class: device must be a str or torch.device, got {type(device).__name__}"
        )
    kind = torch.device(device).type
    if kind not in _DEVICE_TYPES:
        raise ValueError(
            f"device_class: unsupported device type {kind!r}; expected one of {list(_DEVICE_TYPES)}"
        )
    return kind


def check_counts(where: str, repeats: int, number: int, warmup: int) -> None:
    check_int(where, "repeats", repeats, minimum=1)
    check_int(where, "number", number, minimum=1)
    check_int(where, "warmup", warmup, minimum=0)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_once(where: str, fn: Callable[[], Any], number: int, device: str) -> float:
    """Seconds per call of ``number`` calls; refuses a clock that did not advance."""
    sync(device)
    start = time.perf_counter()
    for _ in range(number):
        fn()
    sync(device)
    elapsed = time.perf_counter() - start
    if not elapsed > 0:
        raise RuntimeError(
            f"{where}: the clock did not advance while timing ({elapsed!r} s for {number} "
            f"call(s)): time.perf_counter is frozen or patched, or the calls are shorter than "
            f"its resolution (raise number=). A time of 0 would make an infinite speed-up."
        )
    return elapsed / number
