"""Invariant partners for speed claims: FLOPs and operator counts (introduced in chapter 06).

A speed verdict is a measurement and changes with the machine; *why* a trick is faster is
usually an invariant that does not: fewer floating-point operations, fewer operators, fewer
bytes. This module counts them with PyTorch's own machinery, so a chapter can assert them
exactly on every machine, next to the measured verdict:

- :func:`flop_count` runs a call under :class:`torch.utils.flop_counter.FlopCounterMode`
  and returns the FLOPs it counts (matmuls, convolutions, attention; element-wise ops count 0);
- :func:`aten_op_counts` runs a call under a ``TorchDispatchMode`` and counts every ATen
  operator that reaches the dispatcher (e.g. ``"aten.native_batch_norm"``), which is
  deterministic for a given torch version, model and input, on any device.

The dispatcher counter behind :func:`aten_op_counts` is the package's one such counter
(:func:`count_by_op`): :mod:`tricks_helpers.traffic` counts bytes per operator with it.

Both run the call once, under ``torch.no_grad()`` unless told otherwise, and change no global
state outside the call.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from tricks_helpers._checks import check_bool, check_callable

__all__ = ["flop_count", "aten_op_counts"]


def flop_count(fn: Callable[..., Any], *args: Any, grad: bool = False, **kwargs: Any) -> int:
    """FLOPs counted by ``FlopCounterMode`` while ``fn(*args, **kwargs)`` runs.

    Args:
        fn: the call to count (a module or any callable).
        grad: run with autograd enabled (count a backward by calling it inside ``fn``).

    Returns:
        Total FLOPs (a multiply-add counts 2), an ``int``.

    Raises:
        TypeError: on a non-callable ``fn``.
    """
    check_callable("flop_count", "fn", fn)
    check_bool("flop_count", "grad", grad)
    counter = FlopCounterMode(display=False)
    with counter, contextlib.nullcontext() if grad else torch.no_grad():
        fn(*args, **kwargs)
    return int(counter.get_total_flops())


#: What one operator call adds to its count: ``weigh(func, args, kwargs, out)``, or None to
#: leave the call out. :func:`aten_op_counts` counts 1 per call; ``traffic`` counts bytes.
Weigh = Callable[[Any, tuple[Any, ...], dict[str, Any], Any], int | None]


def _one(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> int:
    return 1


class _OpCounter(TorchDispatchMode):
    """The one dispatcher counter: ``counts[operator packet] += weigh(...)`` for every call."""

    def __init__(self, weigh: Weigh = _one) -> None:
        super().__init__()
        self.weigh = weigh
        self.counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        amount = self.weigh(func, args, kwargs, out)
        if amount is not None:
            self.counts[str(func.overloadpacket)] += amount
        return out


def aten_op_counts(
    fn: Callable[..., Any], *args: Any, grad: bool = False, **kwargs: Any
) -> collections.Counter[str]:
    """How many times each ATen operator ran while ``fn(*args, **kwargs)`` ran.

    Keys are operator packets without overload, e.g. ``"aten.convolution"``,
    ``"aten.native_batch_norm"`` (in eval mode, ``"aten._native_batch_norm_legit_no_training"``).

    Args:
        fn: the call to count.
        grad: run with autograd enabled (default: under ``torch.no_grad()``).

    Returns:
        A :class:`collections.Counter` of operator name -> calls.

    Raises:
        TypeError: on a non-callable ``fn``.
    """
    return count_by_op("aten_op_counts", fn, args, kwargs, grad=grad)


def count_by_op(
    where: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    grad: bool,
    weigh: Weigh = _one,
) -> collections.Counter[str]:
    """Run ``fn(*args, **kwargs)`` once under the dispatcher counter and return its counts.

    The one ``TorchDispatchMode`` counter behind :func:`aten_op_counts` (``weigh`` counts 1
    per call) and :func:`tricks_helpers.traffic.bytes_by_op` (``weigh`` counts the bytes a call
    moves, None for a call that moves none): arguments checked in the caller's name, the call
    run under ``torch.no_grad()`` unless ``grad``, the mode left uninstalled afterwards even
    when ``fn`` raises.

    Returns:
        A :class:`collections.Counter` of operator packet (``"aten.relu"``) -> summed amounts.

    Raises:
        TypeError: on a non-callable ``fn`` or a non-bool ``grad``.
    """
    check_callable(where, "fn", fn)
    check_bool(where, "grad", grad)
    counter = _OpCounter(weigh)
    with contextlib.nullcontext() if grad else torch.no_grad(), counter:
        fn(*args, **kwargs)
    return counter.counts
